package gateway

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/quota"
)

// QuotaMetaKey is the key, in the _meta of a result a quota refused, of
// what refused it: {"quota": name, "limit": "calls" | "concurrent",
// "retryAfter": seconds}.
const QuotaMetaKey = "io.mcphost/quota"

// takeQuota counts the resolved call c against the quotas of l, or
// answers it with the refusal: an isError result that names the quota, the
// limit and when to retry. The caller counts by its identity; the call by
// its server and the tool's name there.
func (h *Host) takeQuota(ctx context.Context, l *quota.Limiter, c *toolCall, tr *callTrace) (*quota.Ticket, mcp.Result) {
	who := quota.Who{Subject: c.caller.Subject, Method: c.caller.AuthMethod, Groups: c.caller.Groups}
	t, r := l.Acquire(ctx, time.Now(), who, c.route.Server, c.route.Tool)
	if r == nil {
		return t, nil
	}
	if tr != nil {
		tr.outcome, tr.quota = CallQuota, r.Quota
	}
	if o, ok := h.observer.(QuotaObserver); ok {
		o.QuotaRefused(r.Quota, r.Kind)
	}
	h.log.Debug("quota refused a call", "tool", c.name, "quota", r.Quota, "limit", r.Kind)
	res := wire.ToolError("call to %s refused: %s", c.name, r.Message())
	res.Meta = mcp.Meta{QuotaMetaKey: map[string]any{"quota": r.Quota, "limit": r.Kind, "retryAfter": r.RetrySeconds()}}
	return nil, res
}

// newLimiter is the limiter of quotas, the next after prev, with windows
// shared through Options.QuotaWindows when set.
func (h *Host) newLimiter(quotas []quota.Quota, prev *quota.Limiter) *quota.Limiter {
	if h.quotaWindows == nil {
		return quota.New(quotas, prev)
	}
	return quota.NewShared(quotas, prev, h.quotaWindows, h.quotaShareFailed)
}

// quotaShareFailed logs that the shared windows failed, at most once a
// minute: a store that is down fails every counted call.
func (h *Host) quotaShareFailed(err error) {
	now := time.Now().UnixNano()
	last := h.quotaLogged.Load()
	if now-last < int64(time.Minute) || !h.quotaLogged.CompareAndSwap(last, now) {
		return
	}
	h.log.Warn("quota windows cannot be shared through the store; this replica counts alone until they can", "error", err)
}

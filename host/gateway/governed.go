package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/decision"
	"github.com/mcphost-project/mcphost/host/internal/outbox"
	"github.com/mcphost-project/mcphost/host/internal/wire"
)

// Policies on every method but tools (ABI 1.2): the list hook filters
// prompt and resource listings, the request hook admits what a client asks
// of an upstream and what an upstream asks of a client, and the message
// hook sees content on its way to the client (results, the params of
// upstream requests, notifications). Without a policy that wants a method,
// none of this costs more than a map lookup.

// CodePolicyDenied is the JSON-RPC error code of a request a policy
// refused: an implementation-defined server error (JSON-RPC 2.0 §5.1) that
// neither MCP nor the go-sdk uses (its transport reads -32003 and -32004
// as a closing connection).
const CodePolicyDenied = -32030

// admit runs the request hook on a request for method naming name on
// server. A denial, or a policy failing closed, is the error to answer;
// notFound, if not nil, is the answer to a denial that asks to stay hidden
// (what a client is told when nothing serves name).
func (h *Host) admit(ctx context.Context, caller abi.Caller, method, server, name string, params any, notFound error) (err error) {
	if notFound != nil && !h.toolsetServes(ctx, server) {
		return notFound // a toolset's endpoint serves its servers' alone
	}
	if h.audit != nil {
		start, rec := time.Now(), &requestTrace{}
		ctx = decision.WithRecorder(ctx, rec.note)
		defer func() { h.auditRequest(start, caller, method, server, name, rec.decisions, err) }()
	}
	if !h.wantsMethod(abi.HookRequest, method) {
		return nil
	}
	raw, err := wire.EncodeJSON(params)
	if err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: %v", method, err)}
	}
	d, err := h.policy.Request(ctx, &abi.RequestInput{Caller: caller, Method: method, Server: server, Name: name, Params: raw})
	if err != nil {
		return &jsonrpc.Error{Code: CodePolicyDenied, Message: fmt.Sprintf("%s refused: %s", method, wire.PolicyMessage(err))}
	}
	if d.Action != abi.ActionDeny {
		return nil
	}
	if d.Hidden && notFound != nil {
		h.log.Debug("request refused by policy, answered as for a name nothing serves", "method", method, "name", name, "reason", d.Reason)
		return notFound // as if it did not exist
	}
	return &jsonrpc.Error{Code: CodePolicyDenied, Message: fmt.Sprintf("%s refused: %s", method, wire.CleanText(d.Reason))}
}

// governMessage runs the message hook over v, a result or params of method,
// and returns v itself when the policy left it as it was, or a new value
// decoded from the policy's answer. An error means v must not be delivered.
func governMessage[T any](ctx context.Context, h *Host, caller abi.Caller, method, server, name string, v *T) (*T, error) {
	if v == nil || !h.wantsMethod(abi.HookMessage, method) {
		return v, nil
	}
	raw, err := wire.EncodeJSON(v)
	if err != nil {
		return nil, err
	}
	out, err := h.policy.Message(ctx, &abi.MessageInput{Caller: caller, Method: method, Server: server, Name: name, Message: raw})
	if err != nil {
		return nil, &jsonrpc.Error{Code: CodePolicyDenied, Message: fmt.Sprintf("%s withheld: %s", method, wire.PolicyMessage(err))}
	}
	if sameSlice(out, raw) {
		return v, nil
	}
	next := new(T)
	if err := json.Unmarshal(out, next); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s withheld: a policy's message is not a valid %s message: %s", method, method, wire.CleanText(err.Error()))}
	}
	return next, nil
}

// sameSlice reports whether a and b are the same bytes in memory: how a
// Policy says it left a message unchanged.
func sameSlice(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// listCache keeps the answers of the list hook, as the view cache keeps
// tools/list answers: per policy generation, snapshot and caller, so a
// client that lists again runs no guest. It is bounded by starting afresh.
type listCache struct {
	mu sync.Mutex
	m  map[listKey]any
}

type listKey struct {
	gen      uint64
	snapshot [32]byte
	method   string
	caller   string // the Caller as JSON
}

const maxListCache = 1024

func (c *listCache) get(k listKey) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *listCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = nil
}

func (c *listCache) put(k listKey, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxListCache {
		c.m = make(map[listKey]any)
	}
	c.m[k] = v
}

// governList runs the list hook over a listing of prompts, resources or
// templates (snapshot identifies the listing). server and key name an
// entry's upstream and routing key; restore puts the key back into an
// entry a policy returned, so that no policy can make an entry route
// elsewhere.
func governList[T any](ctx context.Context, h *Host, caller abi.Caller, method string, snapshot [32]byte, all []*T, server func(*T) string, key func(*T) string, restore func(*T, string)) ([]*T, error) {
	if len(all) == 0 || !h.wantsMethod(abi.HookList, method) {
		return all, nil
	}
	callerJSON, err := json.Marshal(caller)
	if err != nil {
		return nil, err
	}
	ck := listKey{gen: h.policy.Generation(), snapshot: snapshot, method: method, caller: string(callerJSON)}
	if v, ok := h.lists.get(ck); ok {
		return v.([]*T), nil
	}
	out, err := runList(ctx, h, caller, method, all, server, key, restore)
	if err == nil {
		h.lists.put(ck, out)
	}
	return out, err
}

func runList[T any](ctx context.Context, h *Host, caller abi.Caller, method string, all []*T, server func(*T) string, key func(*T) string, restore func(*T, string)) ([]*T, error) {
	items := make([]abi.Item, 0, len(all))
	for _, v := range all {
		raw, err := wire.EncodeJSON(v)
		if err != nil {
			return nil, err
		}
		items = append(items, abi.Item{Server: server(v), Name: key(v), Item: raw})
	}
	got, err := h.policy.List(ctx, &abi.ListInput{Caller: caller, Method: method, Items: items})
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s withheld by policy: %s", method, wire.PolicyMessage(err))}
	}
	type itemKey struct{ server, name string }
	index := make(map[itemKey]int, len(items))
	for i, it := range items {
		index[itemKey{it.Server, it.Name}] = i
	}
	out := make([]*T, 0, len(got))
	for n, it := range got {
		i, ok := index[itemKey{it.Server, it.Name}]
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s withheld by policy: entry %d (server %q, %q) was not listed", method, n, it.Server, it.Name)}
		}
		if bytes.Equal(it.Item, items[i].Item) {
			out = append(out, all[i])
			continue
		}
		next := new(T)
		if err := json.Unmarshal(it.Item, next); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s withheld by policy: entry %q: %s", method, it.Name, wire.CleanText(err.Error()))}
		}
		restore(next, it.Name)
		out = append(out, next)
	}
	return out, nil
}

// governNote returns the outbox's hook for a session's notifications: the
// message hook over log messages, progress and resource updates, which
// runs on the session's writer goroutine. A policy failing closed drops
// the notification, with a warning.
func (h *Host) governNote(ss *mcp.ServerSession, transport string) func(outbox.Note) (outbox.Note, bool) {
	if h.policy == nil {
		return nil
	}
	return func(n outbox.Note) (outbox.Note, bool) {
		var err error
		caller := h.sessionCaller(ss, transport)
		ctx := context.WithoutCancel(n.Ctx)
		switch n.Kind {
		case outbox.NoteLog:
			n.Log, err = governMessage(ctx, h, caller, abi.MethodLoggingMessage, n.Server, "", n.Log)
		case outbox.NoteProgress:
			n.Progress, err = governMessage(ctx, h, caller, abi.MethodProgress, n.Server, "", n.Progress)
		case outbox.NoteResourceUpdated:
			n.Updated, err = governMessage(ctx, h, caller, abi.MethodResourceUpdated, n.Server, n.Updated.URI, n.Updated)
		}
		if err != nil {
			h.log.Warn("notification withheld by policy", "server", n.Server, "kind", n.Kind.String(), "error", err)
			return n, false
		}
		return n, true
	}
}

package gateway

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/internal/outbox"
	"github.com/mcphost-project/mcphost/host/search"
	"github.com/mcphost-project/mcphost/host/toolset"
)

// The hooks of tools.exposure = "search"; host/search does the work, and
// every name but the three search tools is called as always, listed or not.

// searchExposure returns the tools config of the endpoint of ctx (a
// toolset's, or /mcp's) when it exposes its tools by search, or nil when
// it does not.
func (h *Host) searchExposure(ctx context.Context) *catalog.ToolsConfig {
	if toolset.FromContext(ctx) == nil {
		return h.searching.Load()
	}
	if x := h.exposure(ctx); x.Exposure == catalog.ExposureSearch {
		return &x
	}
	return nil
}

// exposeTools takes a new tools config (New, Reconfigure) and reports
// whether sessions' listings change with it.
func (h *Host) exposeTools(t catalog.ToolsConfig) bool {
	next := &t
	if t.Exposure != catalog.ExposureSearch {
		next = nil
	}
	prev := h.searching.Swap(next)
	return (prev == nil) != (next == nil) || next != nil && !slices.Equal(prev.Always, next.Always)
}

// found returns a session's found tools and its entry; nil for a request
// without a session, which keeps none.
func (h *Host) found(ss *mcp.ServerSession) (*search.Found, *downstream) {
	if d, _ := h.sessions.lookup(ss); d != nil && !d.sessionless {
		return &d.found, d
	}
	return nil, nil
}

// searchCall answers a call of one of the search tools under search
// exposure; handled is false for any other call.
func (h *Host) searchCall(ctx context.Context, caller abi.Caller, p *mcp.CallToolParamsRaw, ss *mcp.ServerSession) (res mcp.Result, handled bool, err error) {
	x := h.searchExposure(ctx)
	if x == nil || !search.IsMeta(p.Name) {
		return nil, false, nil
	}
	v, err := h.view(ctx, caller)
	if err != nil {
		return nil, true, err
	}
	cat := h.cat.Load()
	s := &search.Session{
		Scope:  func() *search.Scope { return v.scope.Get(h.index.For(cat.Version, cat.Tools), v.tools) },
		Always: x.Always,
		Call: func(ctx context.Context, name string, args json.RawMessage) (mcp.Result, error) {
			return h.callTool(ctx, caller, name, args, p.Meta, ss)
		},
	}
	if f, d := h.found(ss); f != nil {
		s.Found, s.ListChanged = f, func() { h.toolsChangedFor(ss, d) }
	}
	res, err = s.Handle(ctx, p.Name, p.Arguments)
	return res, true, err
}

// toolsChangedFor sends notifications/tools/list_changed to one session,
// queued behind what it has waiting (outbox.go); every session comes from
// an MCPServer, which set sendNext.
func (h *Host) toolsChangedFor(ss *mcp.ServerSession, d *downstream) {
	send := h.sendNext.Load()
	d.out.Push(h.outboxSender(ss, d), outbox.Note{Kind: outbox.NoteToolsChanged, Ctx: context.Background(), Send: func(ctx context.Context, _ outbox.Note) error {
		_, err := (*send)(ctx, "notifications/tools/list_changed", &mcp.ServerRequest[*mcp.ToolListChangedParams]{Session: ss, Params: &mcp.ToolListChangedParams{}})
		return err
	}})
}

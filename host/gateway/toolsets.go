package gateway

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/codemode"
	"github.com/mcphost-project/mcphost/host/internal/paramheader"
	"github.com/mcphost-project/mcphost/host/sessionless"
	"github.com/mcphost-project/mcphost/host/toolset"
)

// toolsetHandler serves the toolset the path names over transport, by an
// mcp.Server whose middleware (receive) puts it in every request's context.
// Its sessions skip the shortcuts (fastlist.go), which know a session by
// its id alone and would serve /mcp's view.
func (h *Host) toolsetHandler(transport string) http.Handler {
	return h.toolsets.Handler(transport, func() []toolset.Toolset { return h.Config().Toolsets }, func(name string) http.Handler {
		srv := h.newServer(transport, name)
		if transport == DownstreamSSE {
			return mcp.NewSSEHandler(h.serverFor(srv), nil)
		}
		return sessionless.ByProtocol(h.streamableHandlers(srv, h.cfg.Listen.SessionTimeout, h.cfg.Listen.MaxBodyBytes))
	})
}

// in returns the part of v that ts serves (v itself for nil), made once
// per view and definition of ts, with ts's exposure for the listing (code
// mode's limits, for run_code's declarations).
func (v *view) in(ts *toolset.Toolset, code codemode.Limits) *view {
	if ts == nil {
		return v
	}
	if e, ok := v.subsets.Load(ts.Name); ok && e.(*subView).def == ts {
		return e.(*subView).v
	}
	keep, always := ts.Pick(v.tools)
	sv := &view{routes: map[string]catalog.Route{}, result: &mcp.ListToolsResult{Tools: []*mcp.Tool{}}, exec: v.exec, exposure: ts.Exposure, always: always}
	for _, i := range keep {
		t := v.tools[i]
		sv.tools, sv.routes[t.Name], sv.result.Tools = append(sv.tools, t), v.routes[t.Name], append(sv.result.Tools, v.all[i])
		if b, ok := v.params[t.Name]; ok {
			if sv.params == nil {
				sv.params = map[string][]paramheader.Binding{}
			}
			sv.params[t.Name] = b
		}
	}
	sv.all = sv.result.Tools
	if ts.Exposure == toolset.ExposureCode {
		sv.result = &mcp.ListToolsResult{Tools: []*mcp.Tool{codemode.Tool(sv.tools, code)}}
	}
	v.subsets.Store(ts.Name, &subView{def: ts, v: sv})
	return sv
}

type subView struct {
	def *toolset.Toolset // the definition v was made for
	v   *view
}

// toolsetServes reports whether the toolset of ctx, if any, serves the
// prompts and resources of server.
func (h *Host) toolsetServes(ctx context.Context, server string) bool {
	servers, all := toolset.FromContext(ctx).Serves(h.cat.Load().ServerTools())
	return all || servers[server]
}

// exposure is how the endpoint of ctx shows its tools: its toolset's
// exposure and always, or the tools block's.
func (h *Host) exposure(ctx context.Context) catalog.ToolsConfig {
	if ts := toolset.FromContext(ctx); ts != nil {
		return catalog.ToolsConfig{Exposure: ts.Exposure, Always: ts.Always}
	}
	return h.Config().Tools
}

package admin

import (
	"fmt"
	"net/http"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/engine"
	"github.com/mcphost-project/mcphost/host/store"
	"github.com/mcphost-project/mcphost/host/tokens"
	"github.com/mcphost-project/mcphost/host/toolset"
	"github.com/mcphost-project/mcphost/plugins"
)

// toolsetAPI serves /v1/toolsets (namedspecs.go).
var toolsetAPI = namedAPI[config.ToolsetSpec, engine.ToolsetInfo]{
	noun: "toolset", title: "Toolset", plural: "toolsets",
	none: store.ErrNoToolset, inConfig: engine.ErrConfigToolset,
	decode:  config.DecodeToolsetSpec,
	version: func(info engine.ToolsetInfo) int64 { return info.Version },
	engine:  namedEngine[config.ToolsetSpec, engine.ToolsetInfo]{(*engine.Engine).Toolsets, (*engine.Engine).Toolset, (*engine.Engine).PutToolset, (*engine.Engine).DeleteToolset},
}

// toolStats is GET /v1/tools:stats: the catalog's size in bytes and
// tokens, per server and toolset, before policies and after them for the
// caller the query describes (as GET /v1/tools).
func (a *api) toolStats(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	caller := abi.Caller{Transport: "http", Subject: q.Get("subject"), Identity: q.Get("subject"), Groups: q["group"]}
	h := a.e.Host()
	after, err := h.Tools(r.Context(), caller)
	if err != nil {
		writeProblem(w, http.StatusServiceUnavailable, "Policies failed", err.Error())
		return
	}
	rep, err := tokens.Catalog(h.Catalog(), after, h.Config().Toolsets)
	if err != nil {
		problemFor(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// inToolset keeps the tools of the toolset called name, as its endpoint
// serves them (GET /v1/tools?toolset=NAME).
func inToolset(list []toolset.Toolset, name string, tools []plugins.ExplainedTool) ([]plugins.ExplainedTool, error) {
	ts := toolset.Named(list, name)
	if ts == nil {
		return nil, fmt.Errorf("%w: %q", store.ErrNoToolset, name)
	}
	out := make([]plugins.ExplainedTool, 0, len(tools))
	for _, t := range tools {
		if ts.Includes(t.Server, t.Tool.Tool) { // its server and name there, which policies keep
			out = append(out, t)
		}
	}
	return out, nil
}

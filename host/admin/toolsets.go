package admin

import (
	"errors"
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

// The toolsets: the config file's (read-only) and the store's, which PUT
// and DELETE change (host/engine/toolsets.go).

func (a *api) listToolsets(w http.ResponseWriter, r *http.Request) {
	list, err := a.e.Toolsets(r.Context())
	if err != nil {
		toolsetProblem(w, err)
		return
	}
	if list == nil {
		list = []engine.ToolsetInfo{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"toolsets": list})
}

func (a *api) getToolset(w http.ResponseWriter, r *http.Request) {
	info, err := a.e.Toolset(r.Context(), r.PathValue("name"))
	if err != nil {
		toolsetProblem(w, err)
		return
	}
	writeToolset(w, http.StatusOK, info)
}

func (a *api) putToolset(w http.ResponseWriter, r *http.Request) {
	ver, ok := ifMatch(w, r)
	if !ok {
		return
	}
	body, err := readBody(r)
	if err != nil {
		bodyProblem(w, err)
		return
	}
	spec, err := config.DecodeToolsetSpec(body)
	if err != nil {
		toolsetProblem(w, err)
		return
	}
	name := r.PathValue("name")
	info, created, err := a.e.PutToolset(r.Context(), name, spec, ver)
	if err != nil {
		toolsetProblem(w, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", "/v1/toolsets/"+name)
	}
	a.log.Info("toolset stored", "toolset", name, "created", created)
	writeToolset(w, status, info)
}

func (a *api) deleteToolset(w http.ResponseWriter, r *http.Request) {
	ver, ok := ifMatch(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	if err := a.e.DeleteToolset(r.Context(), name, ver); err != nil {
		toolsetProblem(w, err)
		return
	}
	a.log.Info("toolset removed", "toolset", name)
	w.WriteHeader(http.StatusNoContent)
}

func writeToolset(w http.ResponseWriter, status int, info engine.ToolsetInfo) {
	if info.Version != 0 {
		w.Header().Set("ETag", fmt.Sprintf(`"v%d"`, info.Version))
	}
	writeJSON(w, status, info)
}

// toolsetProblem answers err with the status its kind calls for, in a
// toolset's words.
func toolsetProblem(w http.ResponseWriter, err error) {
	var se *config.SpecError
	switch {
	case errors.As(err, &se) && se.Syntax:
		writeProblem(w, http.StatusBadRequest, "Malformed toolset", se.Error(), se.Errors...)
	case errors.As(err, &se):
		writeProblem(w, http.StatusUnprocessableEntity, "Invalid toolset", se.Error(), se.Errors...)
	case errors.Is(err, store.ErrNoToolset):
		writeProblem(w, http.StatusNotFound, "No such toolset", err.Error())
	case errors.Is(err, engine.ErrConfigToolset):
		writeProblem(w, http.StatusConflict, "Config toolset", err.Error())
	case errors.Is(err, store.ErrVersion):
		writeProblem(w, http.StatusPreconditionFailed, "Toolset changed", "the toolset changed since that version; read it again (its ETag) and retry")
	default:
		problemFor(w, err)
	}
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

package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/engine"
	"github.com/mcphost-project/mcphost/host/store"
)

// namedAPI is the admin API of one kind of named definition, quotas or
// toolsets: the config file's (read-only) and the store's, which PUT and
// DELETE change (host/engine/namedspecs.go). S is the kind's JSON spec
// (config.QuotaSpec), I what the engine shows of one (engine.QuotaInfo).
type namedAPI[S, I any] struct {
	noun, title string // "quota", "Quota": in problems and log keys
	plural      string // "quotas": the path /v1/quotas and the list's field
	none        error  // store.ErrNoQuota: 404
	inConfig    error  // engine.ErrConfigQuota: 409
	decode      func([]byte) (S, error)
	version     func(I) int64
	engine      namedEngine[S, I]
}

// namedEngine is the engine's methods of one kind ((*engine.Engine).Quotas, ...).
type namedEngine[S, I any] struct {
	list   func(*engine.Engine, context.Context) ([]I, error)
	get    func(*engine.Engine, context.Context, string) (I, error)
	put    func(*engine.Engine, context.Context, string, S, int64) (I, bool, error)
	delete func(*engine.Engine, context.Context, string, int64) error
}

// routes serves GET /v1/<plural> and GET, PUT and DELETE
// /v1/<plural>/{name}.
func (n namedAPI[S, I]) routes(mux *http.ServeMux, a *api) {
	path := "/v1/" + n.plural
	mux.HandleFunc("GET "+path, n.list(a))
	mux.HandleFunc("GET "+path+"/{name}", n.get(a))
	mux.HandleFunc("PUT "+path+"/{name}", n.put(a))
	mux.HandleFunc("DELETE "+path+"/{name}", n.delete(a))
}

func (n namedAPI[S, I]) list(a *api) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		list, err := n.engine.list(a.e, r.Context())
		if err != nil {
			n.problem(w, err)
			return
		}
		if list == nil {
			list = []I{}
		}
		writeJSON(w, http.StatusOK, map[string]any{n.plural: list})
	}
}

func (n namedAPI[S, I]) get(a *api) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		info, err := n.engine.get(a.e, r.Context(), r.PathValue("name"))
		if err != nil {
			n.problem(w, err)
			return
		}
		n.write(w, http.StatusOK, info)
	}
}

func (n namedAPI[S, I]) put(a *api) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ver, ok := ifMatch(w, r)
		if !ok {
			return
		}
		body, err := readBody(r)
		if err != nil {
			bodyProblem(w, err)
			return
		}
		spec, err := n.decode(body)
		if err != nil {
			n.problem(w, err)
			return
		}
		name := r.PathValue("name")
		info, created, err := n.engine.put(a.e, r.Context(), name, spec, ver)
		if err != nil {
			n.problem(w, err)
			return
		}
		status := http.StatusOK
		if created {
			status = http.StatusCreated
			w.Header().Set("Location", "/v1/"+n.plural+"/"+name)
		}
		a.log.Info(n.noun+" stored", n.noun, name, "created", created)
		n.write(w, status, info)
	}
}

func (n namedAPI[S, I]) delete(a *api) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ver, ok := ifMatch(w, r)
		if !ok {
			return
		}
		name := r.PathValue("name")
		if err := n.engine.delete(a.e, r.Context(), name, ver); err != nil {
			n.problem(w, err)
			return
		}
		a.log.Info(n.noun+" removed", n.noun, name)
		w.WriteHeader(http.StatusNoContent)
	}
}

func (n namedAPI[S, I]) write(w http.ResponseWriter, status int, info I) {
	if v := n.version(info); v != 0 {
		w.Header().Set("ETag", fmt.Sprintf(`"v%d"`, v))
	}
	writeJSON(w, status, info)
}

// problem answers err with the status its kind calls for, in the kind's
// words.
func (n namedAPI[S, I]) problem(w http.ResponseWriter, err error) {
	var se *config.SpecError
	switch {
	case errors.As(err, &se) && se.Syntax:
		writeProblem(w, http.StatusBadRequest, "Malformed "+n.noun, se.Error(), se.Errors...)
	case errors.As(err, &se):
		writeProblem(w, http.StatusUnprocessableEntity, "Invalid "+n.noun, se.Error(), se.Errors...)
	case errors.Is(err, n.none):
		writeProblem(w, http.StatusNotFound, "No such "+n.noun, err.Error())
	case errors.Is(err, n.inConfig):
		writeProblem(w, http.StatusConflict, "Config "+n.noun, err.Error())
	case errors.Is(err, store.ErrVersion):
		writeProblem(w, http.StatusPreconditionFailed, n.title+" changed", "the "+n.noun+" changed since that version; read it again (its ETag) and retry")
	default:
		problemFor(w, err)
	}
}

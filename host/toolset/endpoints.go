package toolset

import (
	"fmt"
	"net/http"
	"sync"
)

// Endpoints keeps the toolsets' HTTP handlers, one per toolset and
// transport, made at the first request and kept: a toolset removed and
// added again gets its handler back, with its sessions. The zero value is
// ready.
type Endpoints struct {
	mu sync.Mutex
	m  map[[2]string]http.Handler
}

// Handler serves, over transport, the toolset named by the request's
// path value "toolset": 404 when current (the definitions now) has none
// of that name, else the handler newHandler made for it.
func (e *Endpoints) Handler(transport string, current func() []Toolset, newHandler func(name string) http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("toolset")
		if Named(current(), name) == nil {
			http.Error(w, fmt.Sprintf("no toolset %q here (mcphost toolsets list shows them)", name), http.StatusNotFound)
			return
		}
		e.get(transport, name, newHandler).ServeHTTP(w, r)
	})
}

func (e *Endpoints) get(transport, name string, newHandler func(string) http.Handler) http.Handler {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := [2]string{transport, name}
	if h := e.m[k]; h != nil {
		return h
	}
	if e.m == nil {
		e.m = map[[2]string]http.Handler{}
	}
	h := newHandler(name)
	e.m[k] = h
	return h
}

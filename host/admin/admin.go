package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/console"
	"github.com/mcphost-project/mcphost/host/engine"
	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/pins"
	"github.com/mcphost-project/mcphost/host/toolformat"
)

// MaxBody bounds request bodies: a server definition is a few hundred
// bytes.
const MaxBody = 1 << 20

// MaxTestTimeout bounds POST /v1/servers:test, whatever connect_timeout
// the definition asks for.
const MaxTestTimeout = 60 * time.Second

// api is the admin API over one engine.
type api struct {
	e       *engine.Engine
	log     hclog.Logger
	console *console.Console
	// pinMu serialises approvals: each reads the pin files, writes them
	// and reloads the plugins.
	pinMu sync.Mutex
}

// Handler serves the admin API of e, and the web console at /. Every
// request but GET /openapi.json and the console's pages needs a credential
// of listen.auth in an admin group, or a console session.
func Handler(e *engine.Engine, log hclog.Logger) http.Handler {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	a := &api{e: e, log: log, console: console.New(e.Host().AuthorizeAdmin, log.Named("console"))}
	mux := http.NewServeMux()
	// The console's pages check their own session (the login page is for
	// anyone); what they show comes from the API below.
	mux.Handle("GET /{$}", a.console)
	mux.Handle("/console/", a.console)
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(OpenAPI)
	})
	mux.HandleFunc("GET /v1/servers", a.listServers)
	mux.HandleFunc("POST /v1/servers", a.createServer)
	mux.HandleFunc("POST /v1/servers:test", a.testServer)
	mux.HandleFunc("GET /v1/servers/{name}", a.getServer)
	mux.HandleFunc("PUT /v1/servers/{name}", a.replaceServer)
	mux.HandleFunc("PATCH /v1/servers/{name}", a.patchServer)
	mux.HandleFunc("DELETE /v1/servers/{name}", a.deleteServer)
	mux.HandleFunc("POST /v1/servers/{name}/reconnect", a.reconnectServer)
	mux.HandleFunc("POST /v1/servers/{name}/disconnect", a.disconnectServer)
	mux.HandleFunc("GET /v1/users", a.listUsers)
	mux.HandleFunc("POST /v1/users", a.createUser)
	mux.HandleFunc("GET /v1/users/{subject}", a.getUser)
	mux.HandleFunc("PATCH /v1/users/{subject}", a.patchUser)
	mux.HandleFunc("DELETE /v1/users/{subject}", a.deleteUser)
	mux.HandleFunc("POST /v1/users/{subject}/keys", a.addUserKey)
	mux.HandleFunc("DELETE /v1/users/{subject}/keys/{id}", a.revokeUserKey)
	mux.HandleFunc("GET /v1/users/{subject}/secrets", a.listUserSecrets)
	mux.HandleFunc("PUT /v1/users/{subject}/secrets/{name}", a.putUserSecret)
	mux.HandleFunc("DELETE /v1/users/{subject}/secrets/{name}", a.deleteUserSecret)
	quotaAPI.routes(mux, a)
	toolsetAPI.routes(mux, a)
	mux.HandleFunc("GET /v1/tools", a.listTools)
	mux.HandleFunc("GET /v1/tools:stats", a.toolStats)
	mux.HandleFunc("GET /v1/plugins", a.listPlugins)
	mux.HandleFunc("GET /v1/audit", a.listAudit)
	// The Prometheus metrics, here as on the MCP listener: a scraper of an
	// admin network need not reach the clients' one.
	if m := e.Metrics(); m != nil {
		mux.Handle("GET /metrics", m.Handler())
	}
	mux.HandleFunc("POST /v1/plugins:reload", a.reloadPlugins)
	mux.HandleFunc("GET /v1/pins", a.listPins)
	mux.HandleFunc("POST /v1/pins", a.approvePins)
	return a.guard(mux)
}

// guard authenticates (the OpenAPI document and the console's own pages
// are public), limits bodies and turns the mux's plain-text 404 and 405
// into problem documents.
func (a *api) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !(r.Method == http.MethodGet && r.URL.Path == "/openapi.json") && !console.Owns(r.URL.Path) {
			id, f := a.authorize(r)
			if f != nil {
				if f.Status == http.StatusUnauthorized {
					w.Header().Set("WWW-Authenticate", `Bearer realm="mcphost-admin"`)
				}
				a.log.Debug("admin request refused", "path", r.URL.Path, "status", f.Status, "reason", f.Reason)
				writeProblem(w, f.Status, http.StatusText(f.Status), f.Reason)
				return
			}
			a.log.Debug("admin request", "method", r.Method, "path", r.URL.Path, "caller", id.String())
		}
		if r.ContentLength > MaxBody {
			writeProblem(w, http.StatusRequestEntityTooLarge, "Body too large", fmt.Sprintf("the admin API takes bodies up to %d bytes", MaxBody))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
		next.ServeHTTP(&methodProblems{ResponseWriter: w, r: r}, r)
	})
}

// authorize checks a request's bearer credential or, without one, its
// console session.
func (a *api) authorize(r *http.Request) (*auth.Identity, *auth.Failure) {
	if r.Header.Get("Authorization") == "" {
		if id, f, ok := a.console.Authenticate(r); ok {
			return id, f
		}
	}
	return a.e.Host().AuthorizeAdmin(r)
}

// methodProblems rewrites the mux's own plain-text 404 and 405 answers
// (a path or method the API does not have) as problem documents.
type methodProblems struct {
	http.ResponseWriter
	r       *http.Request
	swallow bool
}

func (m *methodProblems) WriteHeader(status int) {
	mine := strings.HasPrefix(m.Header().Get("Content-Type"), "application/")
	switch {
	case mine:
	case status == http.StatusMethodNotAllowed:
		m.swallow = true
		writeProblem(m.ResponseWriter, status, "Method not allowed",
			fmt.Sprintf("%s %s is not allowed; allowed: %s", m.r.Method, m.r.URL.Path, m.Header().Get("Allow")))
		return
	case status == http.StatusNotFound:
		m.swallow = true
		writeProblem(m.ResponseWriter, status, "Not found",
			fmt.Sprintf("%s %s is not part of the admin API; GET /openapi.json describes it", m.r.Method, m.r.URL.Path))
		return
	}
	m.ResponseWriter.WriteHeader(status)
}

func (m *methodProblems) Write(b []byte) (int, error) {
	if m.swallow {
		return len(b), nil
	}
	return m.ResponseWriter.Write(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// readBody reads a JSON body: its media type must be JSON (or a merge
// patch where allowed).
func readBody(r *http.Request, types ...string) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		ok := err == nil && mt == "application/json"
		for _, t := range types {
			ok = ok || mt == t
		}
		if !ok {
			return nil, errUnsupportedMedia{ct}
		}
	}
	return io.ReadAll(r.Body)
}

type errUnsupportedMedia struct{ got string }

func (e errUnsupportedMedia) Error() string {
	return fmt.Sprintf("Content-Type %q is not JSON; send application/json", e.got)
}

// bodyProblem answers a body that could not be read.
func bodyProblem(w http.ResponseWriter, err error) {
	var um errUnsupportedMedia
	if errors.As(err, &um) {
		writeProblem(w, http.StatusUnsupportedMediaType, "Unsupported media type", err.Error())
		return
	}
	problemFor(w, err)
}

func (a *api) readSpec(w http.ResponseWriter, r *http.Request) (config.ServerSpec, bool) {
	body, err := readBody(r)
	if err != nil {
		bodyProblem(w, err)
		return config.ServerSpec{}, false
	}
	spec, err := config.DecodeServerSpec(body)
	if err != nil {
		problemFor(w, err)
		return config.ServerSpec{}, false
	}
	return spec, true
}

// ifMatch reads If-Match: "v<version>" (a weak tag is taken too); 0 when
// absent.
func ifMatch(w http.ResponseWriter, r *http.Request) (int64, bool) {
	h := strings.TrimSpace(r.Header.Get("If-Match"))
	if h == "" {
		return 0, true
	}
	tag := strings.Trim(strings.TrimPrefix(h, "W/"), `"`)
	v, err := strconv.ParseInt(strings.TrimPrefix(tag, "v"), 10, 64)
	if err != nil || !strings.HasPrefix(tag, "v") || v <= 0 {
		writeProblem(w, http.StatusBadRequest, "Invalid If-Match", fmt.Sprintf("If-Match %q is not an ETag of this API, which look like \"v42\"", h))
		return 0, false
	}
	return v, true
}

func etag(info engine.ServerInfo) string {
	if info.Version == 0 {
		return ""
	}
	return fmt.Sprintf(`"v%d"`, info.Version)
}

func writeServer(w http.ResponseWriter, status int, info engine.ServerInfo) {
	if t := etag(info); t != "" {
		w.Header().Set("ETag", t)
	}
	writeJSON(w, status, info)
}

func (a *api) listServers(w http.ResponseWriter, r *http.Request) {
	list, err := a.e.Servers(r.Context())
	if err != nil {
		problemFor(w, err)
		return
	}
	if list == nil {
		list = []engine.ServerInfo{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"servers": list})
}

func (a *api) createServer(w http.ResponseWriter, r *http.Request) {
	spec, ok := a.readSpec(w, r)
	if !ok {
		return
	}
	info, err := a.e.CreateServer(r.Context(), spec)
	if err != nil {
		problemFor(w, err)
		return
	}
	a.log.Info("server added", "server", info.Name)
	w.Header().Set("Location", "/v1/servers/"+info.Name)
	writeServer(w, http.StatusCreated, info)
}

func (a *api) getServer(w http.ResponseWriter, r *http.Request) {
	info, err := a.e.Server(r.Context(), r.PathValue("name"))
	if err != nil {
		problemFor(w, err)
		return
	}
	writeServer(w, http.StatusOK, info)
}

func (a *api) replaceServer(w http.ResponseWriter, r *http.Request) {
	ver, ok := ifMatch(w, r)
	if !ok {
		return
	}
	spec, ok := a.readSpec(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	info, created, err := a.e.ReplaceServer(r.Context(), name, spec, ver)
	if err != nil {
		problemFor(w, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", "/v1/servers/"+name)
	}
	a.log.Info("server replaced", "server", name, "created", created)
	writeServer(w, status, info)
}

func (a *api) patchServer(w http.ResponseWriter, r *http.Request) {
	ver, ok := ifMatch(w, r)
	if !ok {
		return
	}
	body, err := readBody(r, "application/merge-patch+json")
	if err != nil {
		bodyProblem(w, err)
		return
	}
	name := r.PathValue("name")
	info, err := a.e.PatchServer(r.Context(), name, body, ver)
	if err != nil {
		problemFor(w, err)
		return
	}
	a.log.Info("server patched", "server", name)
	writeServer(w, http.StatusOK, info)
}

func (a *api) deleteServer(w http.ResponseWriter, r *http.Request) {
	ver, ok := ifMatch(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	if err := a.e.DeleteServer(r.Context(), name, ver); err != nil {
		problemFor(w, err)
		return
	}
	a.log.Info("server removed", "server", name)
	w.WriteHeader(http.StatusNoContent)
}

func (a *api) reconnectServer(w http.ResponseWriter, r *http.Request) {
	info, err := a.e.ReconnectServer(r.Context(), r.PathValue("name"))
	if err != nil {
		problemFor(w, err)
		return
	}
	writeServer(w, http.StatusOK, info)
}

func (a *api) disconnectServer(w http.ResponseWriter, r *http.Request) {
	info, err := a.e.DisconnectServer(r.Context(), r.PathValue("name"))
	if err != nil {
		problemFor(w, err)
		return
	}
	writeServer(w, http.StatusOK, info)
}

func (a *api) testServer(w http.ResponseWriter, r *http.Request) {
	spec, ok := a.readSpec(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), MaxTestTimeout)
	defer cancel()
	res, err := a.e.TestServer(ctx, spec)
	if err != nil {
		problemFor(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (a *api) listTools(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	// The caller the listing is for, as policies would see one over
	// streamable HTTP: subject and groups as authentication sets them.
	caller := abi.Caller{Transport: "http", Subject: q.Get("subject"), Identity: q.Get("subject"), Groups: q["group"]}
	format := toolformat.Provider(q.Get("format"))
	if format != "" && !slices.Contains(toolformat.Providers, format) {
		writeProblem(w, http.StatusBadRequest, "Unknown format", fmt.Sprintf("format %q is none of %q", format, toolformat.Providers))
		return
	}
	tools, err := a.e.Tools(r.Context(), caller)
	if err != nil {
		writeProblem(w, http.StatusServiceUnavailable, "Policies failed", err.Error())
		return
	}
	if name := q.Get("toolset"); name != "" {
		if tools, err = inToolset(a.e.Host().Config().Toolsets, name, tools); err != nil {
			toolsetAPI.problem(w, err)
			return
		}
	}
	if format == "" {
		writeJSON(w, http.StatusOK, map[string]any{"tools": tools})
		return
	}
	// A model API's tool definitions, so that an agent engine need not
	// start its own copy of every upstream; names maps the names the model
	// will call back to mcphost's.
	var exposed []abi.Tool // what the caller sees, not what policies hid
	for _, t := range tools {
		if t.Exposed {
			exposed = append(exposed, t.Tool)
		}
	}
	set, err := toolformat.Convert(format, exposed)
	if err != nil {
		writeProblem(w, http.StatusInternalServerError, "Not converted", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"format": format, "tools": set.Definitions, "names": set.Names()})
}

func (a *api) listPlugins(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"plugins": a.e.Plugins().Status()})
}

func (a *api) reloadPlugins(w http.ResponseWriter, r *http.Request) {
	if err := a.e.ReloadPlugins(r.Context()); err != nil {
		if errors.Is(err, engine.ErrPluginLoad) {
			writeProblem(w, http.StatusUnprocessableEntity, "Plugins failed to load", err.Error()+"; the running plugins stay")
			return
		}
		// The plugins loaded; the store or the upstreams did not follow.
		writeProblem(w, http.StatusServiceUnavailable, "Not reloaded", err.Error()+"; the running configuration stays")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"plugins": a.e.Plugins().Status()})
}

// pinPlugins finds the builtin:pin plugins of the running config; none
// is an empty list.
func (a *api) pinPlugins(w http.ResponseWriter) ([]pins.Plugin, bool) {
	ps, err := pins.Find(a.e.File().Plugins, "")
	if errors.Is(err, pins.ErrNoPlugin) {
		return nil, true
	}
	if err != nil {
		writeProblem(w, http.StatusServiceUnavailable, "Pin file not found", err.Error())
		return nil, false
	}
	return ps, true
}

func (a *api) listPins(w http.ResponseWriter, r *http.Request) {
	ps, ok := a.pinPlugins(w)
	if !ok {
		return
	}
	if len(ps) == 0 {
		writeJSON(w, http.StatusOK, map[string]any{"pins": []any{}})
		return
	}
	list, err := pins.List(ps)
	if err != nil {
		writeProblem(w, http.StatusServiceUnavailable, "Pin file unreadable", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"pins": list})
}

func (a *api) approvePins(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		bodyProblem(w, err)
		return
	}
	var req struct {
		Keys []string `json:"keys"`
		All  bool     `json:"all"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeProblem(w, http.StatusBadRequest, "Malformed approval", "send {\"keys\": [\"server/tool\"]} or {\"all\": true}: "+err.Error())
		return
	}
	if len(req.Keys) == 0 && !req.All {
		writeProblem(w, http.StatusUnprocessableEntity, "Nothing named", "name the tools to approve as server/tool in keys, or send all: true",
			config.FieldError{Field: "keys", Detail: "empty"})
		return
	}
	ps, ok := a.pinPlugins(w)
	if !ok {
		return
	}
	if len(ps) == 0 {
		writeProblem(w, http.StatusUnprocessableEntity, "No pins", `no plugin with source = "builtin:pin" in the config, so nothing is pinned`)
		return
	}
	a.pinMu.Lock()
	defer a.pinMu.Unlock()
	if !req.All {
		// Every key is checked before any is approved: a request naming
		// one unknown tool changes nothing.
		if unknown, err := unknownPins(ps, req.Keys); err != nil {
			writeProblem(w, http.StatusServiceUnavailable, "Pin file unreadable", err.Error())
			return
		} else if len(unknown) > 0 {
			writeUnknownPins(w, unknown)
			return
		}
	}
	// Written, then in effect at once: the plugins reload (as SIGHUP does
	// after `mcphost pins approve`) and, with a shared store, the other
	// replicas hear of it now.
	res, err := a.e.ApprovePins(r.Context(), ps, req.Keys, req.All)
	if err != nil {
		writeProblem(w, http.StatusServiceUnavailable, "Approval not written", err.Error())
		return
	}
	if len(res.Unknown) > 0 {
		// A pin file changed by another process since the check.
		writeUnknownPins(w, res.Unknown)
		return
	}
	approved := make([]string, 0, len(res.Approved))
	for _, ap := range res.Approved {
		approved = append(approved, ap.Key)
	}
	writeJSON(w, http.StatusOK, map[string]any{"approved": approved, "notPending": nonNil(res.NotPending)})
}

// unknownPins returns the keys that no plugin of ps pins, in order.
func unknownPins(ps []pins.Plugin, keys []string) ([]string, error) {
	list, err := pins.List(ps)
	if err != nil {
		return nil, err
	}
	var unknown []string
	for _, k := range keys {
		if !slices.ContainsFunc(list, func(l pins.Listed) bool { return l.Tools[k] != nil }) && !slices.Contains(unknown, k) {
			unknown = append(unknown, k)
		}
	}
	return unknown, nil
}

func writeUnknownPins(w http.ResponseWriter, unknown []string) {
	writeProblem(w, http.StatusUnprocessableEntity, "Unknown tools", fmt.Sprintf("no pinned tool %q (tools are named server/tool, as GET /v1/pins shows them); nothing was approved", unknown),
		config.FieldError{Field: "keys", Detail: strings.Join(unknown, ", ")})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Serve serves h on ln until ctx ends, then shuts down within a few
// seconds. Requests run under ctx: when it ends, so do they (a test
// connection or a wait for a server to connect does not hold up the
// shutdown). The listener has the MCP listener's protections: at most
// maxConns connections, idle ones closed first to make room (so idle
// connections cannot use up the process's descriptors, which the MCP
// listener needs too), a request's headers within 10 s, and the
// DNS-rebinding check (the console checks its pages' origin itself).
func Serve(ctx context.Context, ln net.Listener, h http.Handler, maxConns int, log hclog.Logger) error {
	ln, connState := listener.LimitConnections(ln, maxConns, log)
	srv := &http.Server{Handler: listener.CheckHost(h), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
		ConnState: connState, BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return nil
}

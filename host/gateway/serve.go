package gateway

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/sessionless"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/secrets"
)

// Handler returns the downstream HTTP endpoint: streamable HTTP at /mcp
// (protocol 2026-07-28 served statelessly beside the earlier versions'
// sessions, sessionless.go), legacy SSE at /sse, upstream statuses at
// /status and a liveness probe at /healthz. DNS-rebinding protection is
// on, request bodies are limited, and
// when Listen.Auth or Listen.AuthToken is set every path but /healthz and
// the OAuth metadata needs a credential (identity.go), sessions are bound
// to the identity that opened them, and /status to listen.auth's admin
// groups.
func (h *Host) Handler() http.Handler {
	// Protocol 2026-07-28 goes to a stateless handler beside the
	// stateful one, over the same server (sessionless.go).
	streamable, stateless := h.streamableHandlers(h.MCPServer(DownstreamHTTP), h.cfg.Listen.SessionTimeout, h.cfg.Listen.MaxBodyBytes)
	stateless = h.sessionlessShortcut(stateless, h.cfg.Listen.MaxBodyBytes)
	sse := mcp.NewSSEHandler(h.serverFor(h.MCPServer(DownstreamSSE)), nil)

	mux := http.NewServeMux()
	mux.Handle("/mcp", refuseLargeBody(sessionless.ByProtocol(h.tasks.Handler(h.shortcutHandler(streamable, h.cfg.Listen.SessionTimeout, h.cfg.Listen.MaxBodyBytes)), h.tasks.Sessionless(stateless)), h.cfg.Listen.MaxBodyBytes))
	mux.Handle("/sse", limitBody(sse, h.cfg.Listen.MaxBodyBytes))
	mux.Handle("/mcp/{toolset}", refuseLargeBody(h.toolsetHandler(DownstreamHTTP), h.cfg.Listen.MaxBodyBytes))
	mux.Handle("/sse/{toolset}", limitBody(h.toolsetHandler(DownstreamSSE), h.cfg.Listen.MaxBodyBytes))
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		if !h.mayAdminister(w, r) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		doc := StatusDocument{Servers: h.Statuses(), Reload: h.reloadStatus()}
		if h.policyStatus != nil {
			doc.Plugins = h.policyStatus()
		}
		b, err := json.Marshal(doc)
		if err != nil {
			http.Error(w, "encoding the status: "+err.Error(), http.StatusInternalServerError)
			return
		}
		// Errors quote upstream URLs; the whole document is masked once.
		_, _ = io.WriteString(w, secrets.MaskURLs(string(b))+"\n")
	})
	if h.metrics != nil {
		mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
			if h.mayAdminister(w, r) {
				h.metrics.ServeHTTP(w, r)
			}
		})
	}
	mux.Handle("GET "+upstream.CallbackPath, h.oauth.Logins)
	login := func(w http.ResponseWriter, r *http.Request) { h.oauth.Logins.Serve(w, r, h.authn.Load(), h.log) }
	mux.HandleFunc("GET "+upstream.LoginPath, login)
	mux.HandleFunc("POST "+upstream.LoginPath, login)
	h.secrets.Routes(mux, h.authn.Load)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if h.Draining() {
			// Readiness fails, so that load balancers stop sending here.
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	l := h.cfg.Listen
	var handler http.Handler = h.drainGate(listener.LimitSessions(mux, l.MaxSessions, h.sessions.countNotSSE, h.log))
	handler = h.authenticate(listener.LimitCallers(listener.BindSessions(handler, &h.owners, h.sessions.ids, h.log), l, h.sessions.countFor, h.log))
	return listener.WithDeadlines(listener.CheckOrigin(l.AllowedOrigins, handler), l.ReadTimeout, l.WriteTimeout)
}

// serverFor returns the getServer func of the go-sdk handlers. They call it
// on every HTTP request, so it must hand back one long-lived server and
// never connect anything itself.
func (h *Host) serverFor(srv *mcp.Server) func(*http.Request) *mcp.Server {
	return func(*http.Request) *mcp.Server { return srv }
}

// limitBody caps request bodies for handlers that do not do so themselves.
func limitBody(next http.Handler, limit int64) http.Handler {
	return refuseLargeBody(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		next.ServeHTTP(w, r)
	}), limit)
}

// refuseLargeBody answers 413, with a JSON-RPC error that names the
// setting, a request whose declared length is over limit, before anything
// reads it. (A body without a length is cut where it passes the limit.)
func refuseLargeBody(next http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Connection", "close") // the body is not read
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			_, _ = w.Write(wire.ErrorBody(jsonrpc.CodeInvalidRequest,
				fmt.Sprintf("the request body is %d bytes, over listen.max_body (%d bytes)", r.ContentLength, limit)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// mayAdminister lets through a request to /status (and the management
// endpoints) from an identity in listen.auth's admin groups, or any
// request when the endpoint does not authenticate; it answers 403 to the
// others.
func (h *Host) mayAdminister(w http.ResponseWriter, r *http.Request) bool {
	a := h.authn.Load()
	if a == nil {
		return true
	}
	id := auth.FromContext(r.Context())
	if a.IsAdmin(id) {
		return true
	}
	h.log.Debug("refused an administration request", "caller", id.String(), "path", r.URL.Path)
	http.Error(w, fmt.Sprintf("%s needs a caller in one of the admin groups %q (listen.auth.admin_groups)", r.URL.Path, a.AdminGroups()), http.StatusForbidden)
	return false
}

// ListenAndServe serves Handler on addr until ctx ends, then shuts down
// gracefully. ready, if not nil, receives the bound address once listening.
func (h *Host) ListenAndServe(ctx context.Context, addr string, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	l := h.cfg.Listen
	limited := listener.NewConnLimiter(ln, l.MaxConnections, h.log)
	ln = limited
	if l.TLSCert != "" {
		certs, err := listener.NewCertReloader(l.TLSCert, l.TLSKey, h.log)
		if err != nil {
			limited.Close()
			return err
		}
		ln = tls.NewListener(ln, &tls.Config{GetCertificate: certs.GetCertificate, MinVersion: tls.VersionTLS12})
	}
	// Body reads and writes have per-request deadlines (limits.go); the
	// server's own ReadTimeout and WriteTimeout would cut streams.
	srv := &http.Server{
		Handler:           h.Handler(),
		ReadHeaderTimeout: l.ReadTimeout,
		IdleTimeout:       l.IdleTimeout,
		ConnState:         limited.ConnState,
		ErrorLog:          h.log.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Debug}),
	}
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	grace := 5 * time.Second
	if h.Draining() {
		// The drain waited for the requests; what remains is mostly
		// streams that never go idle.
		grace = time.Second
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	// Streaming responses never go idle, so after the grace period close
	// what remains.
	if err := srv.Shutdown(shutdownCtx); err != nil {
		srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ServeStdio serves one downstream client over r and w (the process's stdin
// and stdout) until the client disconnects or ctx ends.
func (h *Host) ServeStdio(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	srv := h.MCPServer(DownstreamStdio)
	lw := &wire.LockedWriter{W: w}
	err := srv.Run(ctx, &mcp.IOTransport{Reader: wire.StdioFrames(ctx, r, lw), Writer: lw})
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// StatusDocument is what GET /status answers.
type StatusDocument struct {
	Servers []upstream.Status `json:"servers"`
	Plugins any               `json:"plugins,omitempty"`
	// Reload is the latest reload, if there has been one.
	Reload *ReloadStatus `json:"reload,omitempty"`
}

// ReloadStatus is the outcome of the latest reload, which the embedder
// reports with NoteReload.
type ReloadStatus struct {
	At       time.Time `json:"at"`
	Trigger  string    `json:"trigger"` // what started it: "config", "plugin files", ...
	OK       bool      `json:"ok"`
	Error    string    `json:"error,omitempty"`
	LastOKAt time.Time `json:"lastOkAt,omitzero"`
	// Failures counts the reloads that failed since the last that did not,
	// whatever started them; FailuresByTrigger splits that count by
	// Trigger, so that "3 in a row" is not read as 3 of the latest kind.
	Failures          int            `json:"failures"`
	FailuresByTrigger map[string]int `json:"failuresByTrigger,omitempty"`
}

// NoteReload records the outcome of a reload (err nil: it succeeded) for
// GET /status, where a failed one stays until a later one succeeds.
func (h *Host) NoteReload(trigger string, err error) {
	h.reloadMu.Lock()
	defer h.reloadMu.Unlock()
	prev := h.reload
	r := ReloadStatus{At: time.Now(), Trigger: trigger, OK: err == nil}
	if prev != nil {
		r.LastOKAt, r.Failures = prev.LastOKAt, prev.Failures
	}
	if err != nil {
		r.Error = wire.ErrorText(err)
		r.Failures++
		// A new map: the previous status may be being encoded.
		r.FailuresByTrigger = map[string]int{trigger: 1}
		if prev != nil {
			for k, n := range prev.FailuresByTrigger {
				r.FailuresByTrigger[k] += n
			}
		}
	} else {
		r.LastOKAt, r.Failures = r.At, 0
	}
	h.reload = &r
}

func (h *Host) reloadStatus() *ReloadStatus {
	h.reloadMu.Lock()
	defer h.reloadMu.Unlock()
	return h.reload
}

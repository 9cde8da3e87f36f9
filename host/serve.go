package host

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Handler returns the downstream HTTP endpoint: streamable HTTP at /mcp,
// legacy SSE at /sse, upstream statuses at /status and a liveness probe at
// /healthz. DNS-rebinding protection is on, request bodies are limited, and
// when Listen.AuthToken is set every path but /healthz needs it as a bearer
// token.
func (h *Host) Handler() http.Handler {
	streamable := mcp.NewStreamableHTTPHandler(h.serverFor(h.MCPServer(DownstreamHTTP)), &mcp.StreamableHTTPOptions{
		SessionTimeout:      h.cfg.Listen.SessionTimeout,
		MaxRequestBodyBytes: h.cfg.Listen.MaxBodyBytes,
	})
	sse := mcp.NewSSEHandler(h.serverFor(h.MCPServer(DownstreamSSE)), nil)

	mux := http.NewServeMux()
	mux.Handle("/mcp", h.fastList(streamable, h.cfg.Listen.SessionTimeout))
	mux.Handle("/sse", limitBody(sse, h.cfg.Listen.MaxBodyBytes))
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		doc := StatusDocument{Servers: h.Statuses()}
		if h.policyStatus != nil {
			doc.Plugins = h.policyStatus()
		}
		_ = json.NewEncoder(w).Encode(doc)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	return requireToken(h.cfg.Listen.AuthToken, mux)
}

// serverFor returns the getServer func of the go-sdk handlers. They call it
// on every HTTP request, so it must hand back one long-lived server and
// never connect anything itself.
func (h *Host) serverFor(srv *mcp.Server) func(*http.Request) *mcp.Server {
	return func(*http.Request) *mcp.Server { return srv }
}

// limitBody caps request bodies for handlers that do not do so themselves.
func limitBody(next http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		next.ServeHTTP(w, r)
	})
}

// requireToken checks a bearer token in constant time; an empty token
// disables the check.
func requireToken(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			next.ServeHTTP(w, r)
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcphost"`)
			http.Error(w, "missing or invalid bearer token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ListenAndServe serves Handler on addr until ctx ends, then shuts down
// gracefully. ready, if not nil, receives the bound address once listening.
func (h *Host) ListenAndServe(ctx context.Context, addr string, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h.Handler(), ReadHeaderTimeout: 10 * time.Second}
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
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
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
	lw := &lockedWriter{w: w}
	err := srv.Run(ctx, &mcp.IOTransport{Reader: stdioFrames(r, lw), Writer: lw})
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// StatusDocument is what GET /status answers.
type StatusDocument struct {
	Servers []Status `json:"servers"`
	Plugins any      `json:"plugins,omitempty"`
}

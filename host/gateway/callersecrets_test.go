package gateway

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/host/usersecrets"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// secretInURL is a caller template whose callers' sessions dial a URL
// with their secret TOKEN in its path, at closed, where nothing listens;
// the server's own session is the stdio test upstream, which lists the
// tools.
type secretInURL struct{ closed string }

func (s secretInURL) Apply(c upstream.ServerConfig, id *auth.Identity, secrets map[string]string) (upstream.ServerConfig, error) {
	if id != nil {
		c.Transport, c.Command, c.Args, c.URL = upstream.TransportStreamableHTTP, "", nil, "http://"+s.closed+"/"+secrets["TOKEN"]+"/mcp"
	}
	return c, nil
}
func (secretInURL) Secrets() []string { return []string{"TOKEN"} }
func (secretInURL) String() string    { return "url=http://CLOSED/${caller.secrets.TOKEN}/mcp" }

// syncBuffer is a log sink safe for the host's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestCallerSecretOutOfErrors: a caller's secret in their session's URL
// is taken out of the connection's error, in the call's result and in the
// log, where a failed connection would quote it.
func TestCallerSecretOutOfErrors(t *testing.T) {
	const token = "tok-SECRET-in-the-path-4e1a"
	srv := stdioServer("r")
	srv.Caller = secretInURL{closed: testproc.FreeAddr(t)}
	keeper := usersecrets.New(usersecrets.Options{
		Values: func(_ context.Context, subject string, names []string) (map[string]usersecrets.Value, error) {
			return map[string]usersecrets.Value{"TOKEN": {Value: []byte(token), Version: 1}}, nil
		},
	})
	var logs syncBuffer
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: &logs})
	h := startHost(t, Config{Listen: listener.Config{Auth: perUserAuth}, Servers: []upstream.ServerConfig{srv}}, &Options{Secrets: keeper, Logger: log})
	cs := dialAs(t, httptestServer(t, h)+"/mcp", keyOf("alice"), nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "r__echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	got := text(t, res)
	if !res.IsError || !strings.Contains(got, "[REDACTED]") || strings.Contains(got, token) {
		t.Errorf("the call's result: %q (error %v), want the connection's error without the secret", got, res.IsError)
	}
	if strings.Contains(logs.String(), token) || !strings.Contains(logs.String(), "per-client session failed to connect") {
		t.Errorf("the log holds the secret, or not the failure:\n%s", logs.String())
	}
}

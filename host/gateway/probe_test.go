package gateway

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/authtest"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// pidServer is a stdio definition that runs argv through sh, which writes
// its own pid (kept by exec) and that of a background child in the same
// process group to a file first; pids reads them once the server started.
func pidServer(t *testing.T, argv ...string) (cfg upstream.ServerConfig, pids func() []int) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "pids")
	script := `sleep 60 </dev/null >/dev/null 2>&1 & echo $$ $! > "$0"; exec "$@"`
	cfg = upstream.ServerConfig{Transport: upstream.TransportStdio, Command: "sh", Args: append([]string{"-c", script, file}, argv...)}
	return cfg, func() []int {
		t.Helper()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("the server did not start: %v", err)
		}
		var out []int
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("pid file %q: %v", b, err)
			}
			out = append(out, pid)
		}
		if len(out) != 2 {
			t.Fatalf("pid file %q: want two pids", b)
		}
		return out
	}
}

// assertGone fails unless every pid has ended (a zombie counts as ended).
func assertGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if testproc.Alive(pid) {
			t.Errorf("process %d outlived the probe", pid)
		}
	}
}

func toolNames(tools []*mcp.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

// A working stdio server: identity, capabilities, every listing and the
// timings are reported, and the server's whole process group has ended
// by the time Probe returns.
func TestProbeStdio(t *testing.T) {
	cfg, pids := pidServer(t, upstreamBin, "-name", "probed", "-secrets")
	cfg.Env = map[string]string{"HOSTILE_SECRET": "not-a-real-secret"}
	res := upstream.Probe(context.Background(), cfg, testLogger(t))
	if !res.OK {
		t.Fatalf("probe failed at %s: %s (stderr %q)", res.Stage, res.Error, res.Stderr)
	}
	assertGone(t, pids())

	if res.ServerInfo == nil || res.ServerInfo.Name != "probed" || res.ServerInfo.Version != "1.0.0" {
		t.Errorf("serverInfo = %+v", res.ServerInfo)
	}
	if res.ProtocolVersion != upstream.DefaultProtocolVersion {
		t.Errorf("protocolVersion = %q, want the pinned default %q", res.ProtocolVersion, upstream.DefaultProtocolVersion)
	}
	if res.Capabilities == nil || res.Capabilities.Tools == nil || res.Capabilities.Prompts == nil || res.Capabilities.Resources == nil {
		t.Errorf("capabilities = %+v", res.Capabilities)
	}
	if names := toolNames(res.Tools); !slices.Contains(names, "echo") || !slices.Contains(names, "pid") {
		t.Errorf("tools = %v", names)
	}
	if len(res.Prompts) != 1 || res.Prompts[0].Name != "secret_prompt" {
		t.Errorf("prompts = %+v", res.Prompts)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	if slices.Sort(uris); !slices.Equal(uris, []string{"public://readme", "secret://note"}) {
		t.Errorf("resources = %v", uris)
	}
	if len(res.ResourceTemplates) != 1 || res.ResourceTemplates[0].URITemplate != "secret://{name}" {
		t.Errorf("resourceTemplates = %+v", res.ResourceTemplates)
	}
	if res.Error != "" || res.Stage != "" {
		t.Errorf("error %q at stage %q on success", res.Error, res.Stage)
	}
	tm := res.Timing
	if tm.ConnectMs <= 0 || tm.ListMs <= 0 || tm.TotalMs < tm.ConnectMs+tm.ListMs {
		t.Errorf("timing = %+v", tm)
	}
}

// Every failure still encodes its listings as [], and the definition's
// problems are reported at the config stage with the name "test" when it
// has none; nothing is started.
func TestProbeConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  upstream.ServerConfig
		want string
	}{
		{"no command", upstream.ServerConfig{}, `server 0 ("test"): transport "stdio" needs a command`},
		{"bad url", upstream.ServerConfig{Name: "web", Transport: upstream.TransportStreamableHTTP, URL: "ftp://example.com"}, `needs an http(s) url`},
		{"bad url with a password", upstream.ServerConfig{Transport: upstream.TransportSSE, URL: "ftp://user:hunter2-pw@example.com"}, `needs an http(s) url, got "ftp://user:`},
		{"unknown transport", upstream.ServerConfig{Transport: "carrier-pigeon", URL: "http://x"}, `unknown transport "carrier-pigeon"`},
		{"bad oauth", upstream.ServerConfig{Transport: upstream.TransportStreamableHTTP, URL: "http://x", OAuth: &upstream.UpstreamOAuth{Grant: "password"}}, `oauth grant "password" is not supported`},
		{"negative timeout", upstream.ServerConfig{Command: "true", ConnectTimeout: -time.Second}, `timeouts must be positive`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := upstream.Probe(context.Background(), tc.cfg, nil)
			if res.OK || res.Stage != upstream.ProbeStageConfig || !strings.Contains(res.Error, tc.want) {
				t.Fatalf("ok %v, stage %q, error %q; want stage %q and an error with %q", res.OK, res.Stage, res.Error, upstream.ProbeStageConfig, tc.want)
			}
			if strings.Contains(res.Error, "hunter2-pw") {
				t.Errorf("the URL's password is in the error: %s", res.Error)
			}
			if res.Timing.ConnectMs != 0 || res.Timing.TotalMs <= 0 {
				t.Errorf("timing = %+v", res.Timing)
			}
			b, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{`"ok":false`, `"tools":[]`, `"prompts":[]`, `"resources":[]`, `"resourceTemplates":[]`, `"stage":"config"`, `"timing":{"connectMs":0,"listMs":0,"totalMs":`} {
				if !strings.Contains(string(b), want) {
					t.Errorf("JSON lacks %s: %s", want, b)
				}
			}
			for _, absent := range []string{"serverInfo", "capabilities", "protocolVersion", "stderr", "null"} {
				if strings.Contains(string(b), absent) {
					t.Errorf("JSON has %s: %s", absent, b)
				}
			}
		})
	}
}

// A command that does not exist fails at once, at the connect stage,
// naming the command.
func TestProbeCommandNotFound(t *testing.T) {
	cmd := filepath.Join(t.TempDir(), "no-such-mcp-server")
	res := upstream.Probe(context.Background(), upstream.ServerConfig{Name: "missing", Command: cmd, Args: []string{"--stdio"}}, testLogger(t))
	if res.OK || res.Stage != upstream.ProbeStageConnect || !strings.Contains(res.Error, cmd) || !strings.HasPrefix(res.Error, "connecting: ") {
		t.Fatalf("ok %v, stage %q, error %q", res.OK, res.Stage, res.Error)
	}
	t.Logf("failed as: %s; stderr: %q", res.Error, res.Stderr)
	if res.Timing.TotalMs > 5000 {
		t.Errorf("took %.0f ms", res.Timing.TotalMs)
	}
}

// A server that exits at once: its last words are in Stderr (masked as a
// host's status shows them), the error is the connect stage's.
func TestProbeExitsAtOnce(t *testing.T) {
	cfg, pids := pidServer(t, upstreamBin, "-fail", "fatal: cannot read /etc/probe.conf (token=abcdef123456) as plain-env-value-77")
	cfg.Env = map[string]string{"DB_PASS": "plain-env-value-77"}
	res := upstream.Probe(context.Background(), cfg, testLogger(t))
	assertGone(t, pids())
	if res.OK || res.Stage != upstream.ProbeStageConnect || res.Error == "" {
		t.Fatalf("ok %v, stage %q, error %q", res.OK, res.Stage, res.Error)
	}
	t.Logf("failed as: %s; stderr: %q", res.Error, res.Stderr)
	if !strings.Contains(res.Stderr, "fatal: cannot read /etc/probe.conf") {
		t.Errorf("stderr = %q, want the server's last words", res.Stderr)
	}
	if strings.Contains(res.Stderr, "abcdef123456") || strings.Contains(res.Error, "abcdef123456") ||
		strings.Contains(res.Stderr, "plain-env-value-77") || strings.Contains(res.Error, "plain-env-value-77") {
		t.Errorf("a secret the server printed survived: stderr %q, error %q", res.Stderr, res.Error)
	}
	if strings.Contains(res.Error, "fatal:") {
		t.Errorf("the error carries stderr; it has its own field: %q", res.Error)
	}
}

// A server that never answers initialize is given up on after its
// connect_timeout, and its process group is ended; so is one whose probe
// is cancelled by the caller, whatever connect_timeout says.
func TestProbeHangs(t *testing.T) {
	// What each case must not wait for is 30 s (the server's sleep, the
	// default connect_timeout); the bound is well under that and well over
	// what a loaded 2-core machine under -race takes (once 5.3 s for the
	// HTTP case), so it catches a hang and not a slow machine.
	const hang = 15 * time.Second
	t.Run("connect_timeout", func(t *testing.T) {
		cfg, pids := pidServer(t, "sleep", "30")
		cfg.ConnectTimeout = 300 * time.Millisecond
		start := time.Now()
		res := upstream.Probe(context.Background(), cfg, testLogger(t))
		elapsed := time.Since(start)
		assertGone(t, pids())
		if res.OK || res.Stage != upstream.ProbeStageConnect || !strings.Contains(res.Error, "no answer within connect_timeout (300ms)") {
			t.Fatalf("ok %v, stage %q, error %q", res.OK, res.Stage, res.Error)
		}
		// The timeout, then at most the grace periods of ending the group.
		t.Logf("failed as: %s (in %s)", res.Error, elapsed)
		if elapsed > hang || res.Timing.ConnectMs < 300 {
			t.Errorf("took %s (timing %+v)", elapsed, res.Timing)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		cfg, pids := pidServer(t, "sleep", "30")
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		res := upstream.Probe(ctx, cfg, testLogger(t)) // connect_timeout: the default 30 s
		elapsed := time.Since(start)
		assertGone(t, pids())
		if res.OK || res.Stage != upstream.ProbeStageConnect || res.Error == "" || strings.Contains(res.Error, "connect_timeout") {
			t.Fatalf("ok %v, stage %q, error %q", res.OK, res.Stage, res.Error)
		}
		if elapsed > hang {
			t.Errorf("took %s", elapsed)
		}
	})
	t.Run("http", func(t *testing.T) {
		// A listener that accepts and never answers.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			var held []net.Conn
			defer func() {
				for _, c := range held {
					c.Close()
				}
			}()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				held = append(held, c)
			}
		}()
		start := time.Now()
		res := upstream.Probe(context.Background(), upstream.ServerConfig{Name: "mute", Transport: upstream.TransportStreamableHTTP,
			URL: "http://" + ln.Addr().String() + "/mcp", ConnectTimeout: 300 * time.Millisecond}, testLogger(t))
		if res.OK || res.Stage != upstream.ProbeStageConnect || !strings.Contains(res.Error, "connect_timeout") {
			t.Fatalf("ok %v, stage %q, error %q", res.OK, res.Stage, res.Error)
		}
		if elapsed := time.Since(start); elapsed > hang {
			t.Errorf("took %s", elapsed)
		}
	})
}

// probeTarget is a real streamable HTTP MCP server on a loopback listener
// with a tool, a prompt and a resource, that requires the bearer token
// token, and fails tools/list when failList is set.
func probeTarget(t *testing.T, token string, failList bool) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "web", Version: "2.0.0"}, &mcp.ServerOptions{Instructions: "Greets people."})
	mcp.AddTool(srv, &mcp.Tool{Name: "greet", Description: "Greets."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil, nil
	})
	srv.AddPrompt(&mcp.Prompt{Name: "welcome"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	srv.AddResource(&mcp.Resource{Name: "motd", URI: "test://motd"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://motd", Text: "hello"}}}, nil
	})
	if failList {
		srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "tools/list" {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tool registry unavailable"}
				}
				return next(ctx, method, req)
			}
		})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// A streamable HTTP server on a real listener is reached with the
// definition's headers; without the right one the probe fails at the
// connect stage, never showing the header's value.
func TestProbeStreamableHTTP(t *testing.T) {
	const token = "probe-token-4f1c9e"
	url := probeTarget(t, token, false)
	cfg := upstream.ServerConfig{Name: "web", Transport: upstream.TransportStreamableHTTP, URL: url, Headers: map[string]string{"Authorization": "Bearer " + token}}
	res := upstream.Probe(context.Background(), cfg, testLogger(t))
	if !res.OK {
		t.Fatalf("probe failed at %s: %s", res.Stage, res.Error)
	}
	if res.ServerInfo == nil || res.ServerInfo.Name != "web" || res.Instructions != "Greets people." {
		t.Errorf("serverInfo %+v, instructions %q", res.ServerInfo, res.Instructions)
	}
	if got := toolNames(res.Tools); !slices.Equal(got, []string{"greet"}) {
		t.Errorf("tools = %v", got)
	}
	if len(res.Prompts) != 1 || len(res.Resources) != 1 || len(res.ResourceTemplates) != 0 {
		t.Errorf("prompts %+v, resources %+v, templates %+v", res.Prompts, res.Resources, res.ResourceTemplates)
	}
	if res.Stderr != "" || res.Timing.ConnectMs <= 0 {
		t.Errorf("stderr %q, timing %+v", res.Stderr, res.Timing)
	}

	cfg.Headers = map[string]string{"Authorization": "Bearer wrong-token-77aa01"}
	res = upstream.Probe(context.Background(), cfg, testLogger(t))
	if res.OK || res.Stage != upstream.ProbeStageConnect || !strings.Contains(res.Error, "nauthorized") {
		t.Fatalf("ok %v, stage %q, error %q", res.OK, res.Stage, res.Error)
	}
	if strings.Contains(res.Error, "77aa01") {
		t.Errorf("the header's value is in the error: %q", res.Error)
	}
}

// A server that connects but cannot list its tools fails at the list
// stage, with what it said at initialize kept.
func TestProbeListFails(t *testing.T) {
	url := probeTarget(t, "tok-12345678", true)
	res := upstream.Probe(context.Background(), upstream.ServerConfig{Transport: upstream.TransportStreamableHTTP, URL: url,
		Headers: map[string]string{"Authorization": "Bearer tok-12345678"}}, testLogger(t))
	if res.OK || res.Stage != upstream.ProbeStageList || !strings.Contains(res.Error, "listing tools: ") || !strings.Contains(res.Error, "tool registry unavailable") {
		t.Fatalf("ok %v, stage %q, error %q", res.OK, res.Stage, res.Error)
	}
	if res.ServerInfo == nil || res.ServerInfo.Name != "web" || res.Capabilities == nil || res.Capabilities.Tools == nil {
		t.Errorf("serverInfo %+v, capabilities %+v", res.ServerInfo, res.Capabilities)
	}
	if res.Timing.ConnectMs <= 0 || res.Timing.ListMs <= 0 {
		t.Errorf("timing = %+v", res.Timing)
	}
}

// An HTTP address where nothing listens fails at once, not after the
// connect timeout, and credentials in the URL stay out of the error.
func TestProbeNothingListens(t *testing.T) {
	for _, transport := range []string{upstream.TransportStreamableHTTP, upstream.TransportSSE} {
		t.Run(transport, func(t *testing.T) {
			url := "http://user:pa55word-x9@" + testproc.FreeAddr(t) + "/mcp?api_key=k3y-secret-c0ffee"
			start := time.Now()
			res := upstream.Probe(context.Background(), upstream.ServerConfig{Transport: transport, URL: url}, testLogger(t))
			if res.OK || res.Stage != upstream.ProbeStageConnect || !strings.Contains(res.Error, "refused") {
				t.Fatalf("ok %v, stage %q, error %q", res.OK, res.Stage, res.Error)
			}
			if elapsed := time.Since(start); elapsed > 5*time.Second {
				t.Errorf("took %s", elapsed)
			}
			for _, secret := range []string{"pa55word-x9", "k3y-secret-c0ffee"} {
				if strings.Contains(res.Error, secret) {
					t.Errorf("%q is in the error: %s", secret, res.Error)
				}
			}
		})
	}
}

// An SSE server (the legacy transport) in its own process.
func TestProbeSSE(t *testing.T) {
	addr := testproc.FreeAddr(t)
	startProcess(t, addr, upstreamBin, "-http="+addr, "-sse", "-name", "legacy")
	res := upstream.Probe(context.Background(), upstream.ServerConfig{Name: "legacy", Transport: upstream.TransportSSE, URL: "http://" + addr}, testLogger(t))
	if !res.OK {
		t.Fatalf("probe failed at %s: %s", res.Stage, res.Error)
	}
	if res.ServerInfo == nil || res.ServerInfo.Name != "legacy" || !slices.Contains(toolNames(res.Tools), "echo") {
		t.Errorf("serverInfo %+v, tools %v", res.ServerInfo, toolNames(res.Tools))
	}
}

// A server behind OAuth is reached with the client_credentials grant as a
// host reaches it; a wrong client secret fails the probe without showing
// the secret.
func TestProbeOAuth(t *testing.T) {
	as := authtest.New(t)
	url := protectedServer(t, as)
	as.AddClient("mcphost", authtest.Client{Secret: "right-secret-0123", Subject: "svc:mcphost", Audience: url})
	cfg := upstream.ServerConfig{Name: "p", Transport: upstream.TransportStreamableHTTP, URL: url, ConnectTimeout: 5 * time.Second,
		OAuth: &upstream.UpstreamOAuth{Grant: upstream.GrantClientCredentials, ClientID: "mcphost", ClientSecret: "right-secret-0123"}}
	res := upstream.Probe(context.Background(), cfg, testLogger(t))
	if !res.OK || !slices.Equal(toolNames(res.Tools), []string{"whoami"}) {
		t.Fatalf("ok %v at %s: %s; tools %v", res.OK, res.Stage, res.Error, toolNames(res.Tools))
	}

	cfg.OAuth.ClientSecret = "wrong-secret-0123"
	res = upstream.Probe(context.Background(), cfg, testLogger(t))
	if res.OK || res.Stage != upstream.ProbeStageConnect || res.Error == "" {
		t.Fatalf("ok %v, stage %q, error %q", res.OK, res.Stage, res.Error)
	}
	if strings.Contains(res.Error, "wrong-secret") {
		t.Errorf("the client secret is in the error: %q", res.Error)
	}
	t.Logf("failed as: %s", res.Error)
}

// probeMask takes the definition's own secrets out of a message, word for
// word, besides what errorText masks.
func TestProbeMask(t *testing.T) {
	cfg := upstream.ServerConfig{Headers: map[string]string{"Authorization": "Token zz-opaque-42", "X-Api": "abc", "X-Tenant": "acme-corp-eu"},
		Env:   map[string]string{"DB": "env-dsn-value-9", "N": "1"},
		OAuth: &upstream.UpstreamOAuth{ClientSecret: "s3cr3t-value"}}
	got := upstream.ProbeMask(`sent "Token zz-opaque-42"; got zz-opaque-42 back; tenant acme-corp-eu; oauth s3cr3t-value; db env-dsn-value-9; abc kept; GET https://x.example/?access_token=t0k3n`, cfg)
	for _, secret := range []string{"zz-opaque-42", "acme-corp-eu", "s3cr3t-value", "env-dsn-value-9", "t0k3n"} {
		if strings.Contains(got, secret) {
			t.Errorf("%q survived: %s", secret, got)
		}
	}
	if !strings.Contains(got, "abc kept") {
		t.Errorf("a value too short to be a secret was masked: %s", got)
	}
}

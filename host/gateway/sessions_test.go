package gateway

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

func perClient(sc upstream.ServerConfig) upstream.ServerConfig {
	sc.Sessions = upstream.SessionsPerClient
	return sc
}

// Two clients of a per_client server get two upstream sessions (here two
// processes), and what each one's server sends (sampling, logs) reaches
// only that client, with calls running at the same time.
func TestPerClientSessionIsolation(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{perClient(stdioServer("a"))}}, nil)
	var c1, c2 samplingClient
	cs1 := connectHTTP(t, h, c1.options())
	cs2 := connectHTTP(t, h, c2.options())
	ctx := context.Background()
	for _, cs := range []*mcp.ClientSession{cs1, cs2} {
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
	}
	pid1, _ := callText(t, cs1, "a__pid", nil)
	pid2, _ := callText(t, cs2, "a__pid", nil)
	if pid1 == pid2 {
		t.Fatalf("both clients reached upstream process %s", pid1)
	}
	if again, _ := callText(t, cs1, "a__pid", nil); again != pid1 {
		t.Fatalf("client 1 moved from process %s to %s", pid1, again)
	}

	var wg sync.WaitGroup
	for i, cs := range []*mcp.ClientSession{cs1, cs2} {
		name := []string{"one", "two"}[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				if got, isErr := callText(t, cs, "a__sample", map[string]any{"text": name, "millis": 20}); isErr || got != "echo: "+name {
					t.Errorf("client %s: sample = %q (isError %v)", name, got, isErr)
				}
				callText(t, cs, "a__log", map[string]any{"text": "log-" + name})
			}
		}()
	}
	wg.Wait()
	for i, c := range []*samplingClient{&c1, &c2} {
		name := []string{"one", "two"}[i]
		testproc.WaitFor(t, "logs", 5*time.Second, func() bool { _, logs := c.seen(); return len(logs) == 5 })
		prompts, logs := c.seen()
		if len(prompts) != 5 {
			t.Errorf("client %s was asked %d times, want 5", name, len(prompts))
		}
		for _, p := range prompts {
			if p != name {
				t.Errorf("client %s was asked %q", name, p)
			}
		}
		for _, l := range logs {
			if l != "log-"+name {
				t.Errorf("client %s got log %q", name, l)
			}
		}
	}
	if n := h.upstreamNamed("a").Status().ClientSessions; n != 2 {
		t.Errorf("per-client sessions = %d, want 2", n)
	}
}

// upstreamProcs counts running upstream processes started with -name name.
func upstreamProcs(t *testing.T, name string) int {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	n := 0
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) >= 3 && args[0] == upstreamBin && args[1] == "-name" && args[2] == name {
			if st, err := os.ReadFile(d + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
				n++
			}
		}
	}
	return n
}

// Opening and closing 200 client sessions leaves the upstream process
// count where it began: per-client sessions end with their client.
func TestPerClientSessionsDoNotLeak(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{perClient(stdioServer("leak"))}}, nil)
	base := upstreamProcs(t, "leak")
	if base != 1 {
		t.Fatalf("%d upstream processes at start, want the shared one", base)
	}
	url := httptestServer(t, h) + "/mcp"
	const sessions, workers = 200, 4
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		pids = map[string]bool{}
	)
	jobs := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				c := mcp.NewClient(&mcp.Implementation{Name: "leak-client"}, nil)
				cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
				if err != nil {
					t.Error(err)
					return
				}
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "leak__pid"})
				if err != nil || res.IsError {
					t.Errorf("call: %v %+v", err, res)
				} else {
					mu.Lock()
					pids[text(t, res)] = true
					mu.Unlock()
				}
				cs.Close()
			}
		}()
	}
	for i := 0; i < sessions; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if len(pids) != sessions {
		t.Errorf("%d client sessions reached %d upstream processes, want one each", sessions, len(pids))
	}
	testproc.WaitFor(t, "per-client processes to end", 20*time.Second, func() bool {
		return upstreamProcs(t, "leak") == base && h.upstreamNamed("leak").Status().ClientSessions == 0 && h.sessions.count() == 0
	})
}

// Per-client sessions are bounded: past MaxSessions an idle one is evicted,
// and when all are busy a new client is refused with a clear error.
func TestPerClientSessionsAreBounded(t *testing.T) {
	sc := perClient(stdioServer("a"))
	sc.MaxSessions = 1
	h := startHost(t, Config{Servers: []upstream.ServerConfig{sc}}, nil)
	cs1 := connectHTTP(t, h, nil)
	cs2 := connectHTTP(t, h, nil)
	pid1, _ := callText(t, cs1, "a__pid", nil)
	pid2, _ := callText(t, cs2, "a__pid", nil) // evicts client 1's idle session
	if pid1 == pid2 {
		t.Fatal("one upstream session served both clients")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		callText(t, cs2, "a__sleep", map[string]any{"millis": 1000})
	}()
	testproc.WaitFor(t, "client 2's call to be in flight", 5*time.Second, func() bool { return h.Statuses()[0].InFlight == 1 })
	got, isErr := callText(t, cs1, "a__pid", nil)
	if !isErr || !strings.Contains(got, "too many client sessions") {
		t.Errorf("call while the only session is busy = %q (isError %v)", got, isErr)
	}
	<-done
}

// Idle per-client sessions are reaped after the server's idle timeout.
func TestPerClientSessionsIdleReaping(t *testing.T) {
	sc := perClient(stdioServer("idle"))
	sc.IdleTimeout = 300 * time.Millisecond
	h := startHost(t, Config{Servers: []upstream.ServerConfig{sc}}, nil)
	cs := connectHTTP(t, h, nil)
	callText(t, cs, "idle__pid", nil)
	testproc.WaitFor(t, "the idle per-client session to be reaped", 5*time.Second, func() bool {
		return h.upstreamNamed("idle").Status().ClientSessions == 0 && upstreamProcs(t, "idle") == 0
	})
	if got, isErr := callText(t, cs, "idle__echo", map[string]any{"text": "back"}); isErr || got != "back" {
		t.Fatalf("after reaping: %q (isError %v)", got, isErr)
	}
}

// Clients speaking 2025-06-18 and 2025-11-25 are served over HTTP; the
// 2026-07-28 protocol is served where the go-sdk serves it (not over the
// stateful HTTP handler, which negotiates down).
func TestProtocolVersions(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{everythingServer("every")}}, nil)
	url := httptestServer(t, h) + "/mcp"
	for _, v := range []string{"2025-06-18", "2025-11-25", "2026-07-28"} {
		t.Run(v, func(t *testing.T) {
			var c samplingClient
			client := mcp.NewClient(&mcp.Implementation{Name: "v"}, c.options())
			cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			got := cs.InitializeResult().ProtocolVersion
			if got != v {
				t.Errorf("negotiated %s, want %s", got, v)
			}
			// At 2026-07-28 in rounds (rounds.go).
			if s, isErr := callText(t, cs, "every__test_sampling", map[string]any{"prompt": "hi"}); isErr || s != "LLM response: echo: hi" {
				t.Errorf("sampling over %s (negotiated %s) = %q", v, got, s)
			}
			if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "test://static-text"}); err != nil {
				t.Error(err)
			}
		})
	}
	// In memory (as embedders and stdio serve it), 2026-07-28 is negotiated.
	st, ct := mcp.NewInMemoryTransports()
	ss, err := h.MCPServer(DownstreamEmbedded).Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "new"}, nil).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	t.Logf("in memory: negotiated %s", cs.InitializeResult().ProtocolVersion)
	if s, isErr := callText(t, cs, "every__test_simple_text", nil); isErr {
		t.Errorf("simple text = %q", s)
	}
	if _, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "every__test_simple_prompt"}); err != nil {
		t.Error(err)
	}
}

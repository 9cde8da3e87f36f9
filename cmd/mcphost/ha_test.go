package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/pgtest"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// haDuration is how long TestThreeReplicasBehindHAProxy loads the
// replicas: short by default (CI), longer with MCPHOST_HA_DURATION=3m
// (docs/DEPLOY.md records such a run).
func haDuration(t *testing.T) time.Duration {
	if s := os.Getenv("MCPHOST_HA_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 10*time.Second {
			t.Fatalf("MCPHOST_HA_DURATION=%q: want a duration of 10s or more", s)
		}
		return d
	}
	return 20 * time.Second
}

// haproxyPath finds HAProxy (Debian's package puts it in /usr/sbin): the
// test skips without it, and fails in CI, where .ci/run installs it.
func haproxyPath(t *testing.T) string {
	for _, p := range []string{"haproxy", "/usr/sbin/haproxy"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("haproxy is not installed (apt-get install haproxy; .ci/run does)")
	}
	t.Skip("haproxy is not installed (apt-get install haproxy)")
	return ""
}

// haReplica is one `mcphost run` process of the three, which the test
// kills and starts again on the same addresses.
type haReplica struct {
	name     string // HAProxy's name for it
	mcp, api string
	cfg      string
	proc     *runningMcphost // the latest process started
}

func (r *haReplica) start(t *testing.T) {
	t.Helper()
	r.proc = startMcphost(t, "http://"+r.mcp+"/healthz", 30*time.Second, "run", r.cfg)
}

// stop ends the process with sig, and with SIGKILL if it is still there
// 15 s later.
func (r *haReplica) stop(sig syscall.Signal) {
	if r.proc != nil {
		r.proc.stop(sig, 15*time.Second)
	}
}

// haClient is one MCP client through HAProxy: 2025-11-25 sessions, calls
// one after another, a new session whenever its own is gone.
type haClient struct {
	id   int
	lb   string
	seen *replicaSeen

	pause                time.Duration // between calls
	ok, notRun, sessions int
	lastOK               time.Time
	failed               []failedCall
	onReplica            map[string]int // sessions opened on each replica
}

type failedCall struct {
	start, end time.Time
	replica    string // the replica of the call's session
	err        error
}

// replicaSeen records the X-Mcphost-Replica header (haproxy.cfg sets it)
// of the last response, so a client knows which replica its session is on.
type replicaSeen struct {
	base http.RoundTripper
	mu   sync.Mutex
	last string
}

func (s *replicaSeen) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+replicaKey)
	resp, err := s.base.RoundTrip(r)
	if err == nil && r.Method == http.MethodPost {
		if name := resp.Header.Get("X-Mcphost-Replica"); name != "" {
			s.mu.Lock()
			s.last = name
			s.mu.Unlock()
		}
	}
	return resp, err
}

func (s *replicaSeen) get() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func (c *haClient) run(ctx context.Context, end time.Time) {
	hc := &http.Client{Transport: c.seen}
	var cs *mcp.ClientSession
	replica := ""
	defer func() {
		if cs != nil {
			cs.Close()
		}
	}()
	for i := 1; time.Now().Before(end) && ctx.Err() == nil; {
		if cs == nil {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			var err error
			cs, err = mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("ha-client-%d", c.id)}, nil).Connect(cctx,
				&mcp.StreamableClientTransport{Endpoint: "http://" + c.lb + "/mcp", HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			cancel()
			if err != nil {
				cs = nil
				time.Sleep(100 * time.Millisecond)
				continue
			}
			replica = c.seen.get()
			c.sessions++
			c.onReplica[replica]++
		}
		text := fmt.Sprintf("client %d call %d", c.id, i)
		start := time.Now()
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": text}})
		cancel()
		if err == nil && !res.IsError && len(res.Content) == 1 && strings.Contains(res.Content[0].(*mcp.TextContent).Text, text) {
			c.ok++
			c.lastOK = time.Now()
			i++
			time.Sleep(c.pause)
			continue
		}
		old := cs
		cs = nil
		go old.Close() // a dead session's close must not hold the loop
		if errors.Is(err, mcp.ErrSessionMissing) {
			// 404: the session's replica is gone and the request reached
			// another, which ran nothing. The same call again, on a new
			// session.
			c.notRun++
			continue
		}
		if err == nil {
			err = fmt.Errorf("unexpected result %+v", res)
		}
		c.failed = append(c.failed, failedCall{start, time.Now(), replica, err})
		i++
	}
}

// startHA starts one PostgreSQL database, three `mcphost run` processes
// sharing it, and HAProxy in front of them with deploy/haproxy.cfg; it
// returns the replicas, HAProxy's address and its log. Each replica's
// config has the server "up" and then extra. Everything stops when the
// test ends.
func startHA(t *testing.T, extra string) (replicas []*haReplica, lb string, hlogs *testproc.Buffer) {
	t.Helper()
	haproxy := haproxyPath(t)
	dsn := pgtest.NewDatabase(t)

	replicas = make([]*haReplica, 3)
	env := []string{}
	for i := range replicas {
		r := &haReplica{name: fmt.Sprintf("mcphost%d", i+1), mcp: testproc.FreeAddr(t), api: testproc.FreeAddr(t)}
		r.cfg = writeConfig(t, fmt.Sprintf(`
listen {
  http          = %q
  drain_timeout = "5s"
  auth {
    key "op" {
      value   = %q
      subject = "operator"
      groups  = ["admins"]
    }
  }
}
admin {
  http = %q
}
store {
  postgres = %q
  key      = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="
  poll     = "500ms"
}
server "up" {
  command = "UPSTREAM"
  args    = ["-name", "up"]
}
`+extra, r.mcp, replicaKey, r.api, dsn))
		replicas[i] = r
		t.Cleanup(func() { r.stop(syscall.SIGTERM) })
		env = append(env, fmt.Sprintf("MCPHOST_%d=%s", i+1, r.mcp))
	}
	var wg sync.WaitGroup
	for _, r := range replicas {
		wg.Add(1)
		go func() { defer wg.Done(); r.start(t) }()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// HAProxy with the documented config, in the foreground.
	lb = testproc.FreeAddr(t)
	hlogs = &testproc.Buffer{}
	hp := exec.Command(haproxy, "-f", filepath.Join("..", "..", "deploy", "haproxy.cfg"), "-db")
	hp.Env = append(os.Environ(), append(env, "MCPHOST_LB="+lb)...)
	hp.Stdout, hp.Stderr = hlogs, hlogs
	hp.WaitDelay = 5 * time.Second
	if err := hp.Start(); err != nil {
		t.Fatal(err)
	}
	hpDone := make(chan struct{})
	go func() { hp.Wait(); close(hpDone) }()
	t.Cleanup(func() {
		hp.Process.Signal(syscall.SIGTERM)
		select {
		case <-hpDone:
		case <-time.After(10 * time.Second):
			hp.Process.Kill()
			<-hpDone
		}
	})
	testproc.WaitFor(t, "HAProxy to pass requests", 15*time.Second, func() bool {
		resp, err := http.Get("http://" + lb + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	})
	return replicas, lb, hlogs
}

// TestThreeReplicasBehindHAProxy: HAProxy, with deploy/haproxy.cfg, in
// front of three `mcphost run` processes sharing one PostgreSQL store.
// Clients call tools through it in 2025-11-25 sessions while one replica
// is killed (SIGKILL) and started again. No call is lost but those in
// flight on the killed replica, every client recovers, a server added
// through one replica's admin API is served by all within seconds, and
// the three catalogs are identical.
func TestThreeReplicasBehindHAProxy(t *testing.T) {
	duration := haDuration(t)
	replicas, lb, hlogs := startHA(t, "")

	// The load: clients looping calls through HAProxy.
	ctx, cancel := context.WithTimeout(context.Background(), duration+2*time.Minute)
	defer cancel()
	const nClients = 6
	clients := make([]*haClient, nClients)
	end := time.Now().Add(duration)
	var cwg sync.WaitGroup
	for i := range clients {
		// Half the clients pause 5 ms between calls, so that each is
		// nearly always in the middle of one; the others 300 ms, so that
		// the kill finds them between calls, their session gone.
		pause := 5 * time.Millisecond
		if i%2 == 1 {
			pause = 300 * time.Millisecond
		}
		c := &haClient{id: i + 1, lb: lb, pause: pause, seen: &replicaSeen{base: http.DefaultTransport}, onReplica: map[string]int{}}
		clients[i] = c
		cwg.Add(1)
		go func() { defer cwg.Done(); c.run(ctx, end) }()
	}

	// A third of the way in, replica 2 dies and comes back.
	time.Sleep(duration * 3 / 10)
	victim := replicas[1]
	killStart := time.Now()
	victim.stop(syscall.SIGKILL)
	killedAt := time.Now()
	t.Logf("killed %s at %v", victim.name, killedAt.Sub(end.Add(-duration)).Round(time.Millisecond))
	time.Sleep(time.Second)
	victim.start(t)
	restartedAt := time.Now()
	t.Logf("%s serving again %v after the kill", victim.name, restartedAt.Sub(killedAt).Round(time.Millisecond))
	if end.Sub(restartedAt) < 5*time.Second {
		t.Fatalf("the restart left %v of the run; make MCPHOST_HA_DURATION longer", end.Sub(restartedAt))
	}
	cwg.Wait()

	ok, notRun, inFlight, sessions := 0, 0, 0, 0
	onVictim := 0
	for _, c := range clients {
		ok += c.ok
		notRun += c.notRun
		sessions += c.sessions
		onVictim += c.onReplica[victim.name]
		for _, f := range c.failed {
			if f.replica == victim.name && f.start.Before(killedAt) && f.end.After(killStart) {
				inFlight++
				t.Logf("client %d (pause %v): a call in flight on %s at the kill failed, as it may: %v", c.id, c.pause, victim.name, f.err)
				continue
			}
			t.Errorf("client %d: a call lost that was not in flight on the killed replica (session on %s, %v to %v, kill at %v): %v",
				c.id, f.replica, f.start.Format("15:04:05.000"), f.end.Format("15:04:05.000"), killStart.Format("15:04:05.000"), f.err)
		}
		if !c.lastOK.After(restartedAt) {
			t.Errorf("client %d made no successful call after the restart (last at %v)", c.id, c.lastOK.Format("15:04:05.000"))
		}
		if c.ok == 0 {
			t.Errorf("client %d made no successful call", c.id)
		}
	}
	if onVictim == 0 {
		t.Error("no session was ever on the killed replica: the kill tested nothing")
	}
	t.Logf("%v with %d clients: %d calls succeeded (%.0f/s), %d failed in flight on the killed replica, %d answered 404 (session gone, ran nowhere) and were made again; %d sessions, %d of them on %s",
		duration, nClients, ok, float64(ok)/duration.Seconds(), inFlight, notRun, sessions, onVictim, victim.name)

	// A server added through one replica's admin API is served by all.
	def := fmt.Sprintf(`{"name":"added","command":%q,"args":["-name","added"]}`, upstreamBin)
	if code, body, err := (&replica{api: replicas[0].api}).call("POST", "/v1/servers", def); err != nil || code != http.StatusCreated {
		t.Fatalf("adding a server through %s: %d %v %v", replicas[0].name, code, body, err)
	}
	added := time.Now()
	direct := make([]*mcp.ClientSession, len(replicas))
	for i, r := range replicas {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "ha-direct"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: "http://" + r.mcp + "/mcp", HTTPClient: &http.Client{Transport: bearer{replicaKey, http.DefaultTransport}}}, nil)
		if err != nil {
			t.Fatalf("%s directly: %v", r.name, err)
		}
		defer cs.Close()
		direct[i] = cs
	}
	catalog := func(cs *mcp.ClientSession) string {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			return "error: " + err.Error()
		}
		b, _ := json.Marshal(res.Tools)
		return string(b)
	}
	testproc.WaitFor(t, "every replica to serve the added server", 15*time.Second, func() bool {
		for _, cs := range direct {
			if !strings.Contains(catalog(cs), `"added__echo"`) {
				return false
			}
		}
		return true
	})
	t.Logf("the server added through %s was served by all three %v later", replicas[0].name, time.Since(added).Round(time.Millisecond))
	// The catalogs, read from each replica directly, are one.
	first := catalog(direct[0])
	for i, cs := range direct[1:] {
		if got := catalog(cs); got != first {
			t.Errorf("%s's catalog differs from %s's:\n%s\n%s", replicas[i+1].name, replicas[0].name, got, first)
		}
	}
	if t.Failed() {
		t.Logf("haproxy:\n%s", hlogs)
		for _, r := range replicas {
			t.Logf("%s:\n%s", r.name, r.proc.logs)
		}
	}
}

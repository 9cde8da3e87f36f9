package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// answered is one HTTP response through HAProxy: which replica answered
// (X-Mcphost-Replica, which haproxy.cfg sets) the request sent at start.
type answered struct {
	replica    string
	start, end time.Time
}

func (a answered) String() string { return a.replica }

// replicaTrail records the replica of every POST a client makes through
// HAProxy, in order, and adds the client's key.
type replicaTrail struct {
	base http.RoundTripper
	mu   sync.Mutex
	all  []answered
}

func (t *replicaTrail) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+replicaKey)
	start := time.Now()
	resp, err := t.base.RoundTrip(r)
	if err == nil && r.Method == http.MethodPost {
		t.mu.Lock()
		t.all = append(t.all, answered{resp.Header.Get("X-Mcphost-Replica"), start, time.Now()})
		t.mu.Unlock()
	}
	return resp, err
}

// since returns the responses recorded from the n-th on.
func (t *replicaTrail) since(n int) []answered {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]answered(nil), t.all[n:]...)
}

func (t *replicaTrail) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.all)
}

// connect2026 connects a go-sdk client of protocol 2026-07-28 (its
// default) through HAProxy at lb. Its sampling handler answers
// "sampled: PROMPT", which the upstream's sample tool returns, after
// calling wait, if not nil.
func connect2026(ctx context.Context, t *testing.T, lb string, trail *replicaTrail, wait func()) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "ha-2026"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			if wait != nil {
				wait()
			}
			prompt := req.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "sampled: " + prompt}}, nil
		},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + lb + "/mcp", HTTPClient: &http.Client{Transport: trail}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s through HAProxy, want 2026-07-28", v)
	}
	return cs
}

// call2026 makes one of the test's kinds of request and checks its
// answer: tools/list; tools/call of echo, or of sleep (1 s); tools/call of
// asker's sample, whose upstream asks the client's LLM, so that it takes
// two rounds (an input_required answer, then the retry with the answer).
// "asker" is a server of its own so that no other client's call is in
// flight on its shared upstream session when it asks.
func call2026(ctx context.Context, cs *mcp.ClientSession, kind string, n int) error {
	if kind == "list" {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			return err
		}
		names := []string{}
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		if all := strings.Join(names, " "); !strings.Contains(all, "up__echo") || !strings.Contains(all, "asker__sample") {
			return fmt.Errorf("tools/list answered %v, without up__echo or asker__sample", names)
		}
		return nil
	}
	text := fmt.Sprintf("%s %d", kind, n)
	var name, want string
	var args map[string]any
	switch kind {
	case "echo":
		name, args, want = "up__echo", map[string]any{"text": text}, text
	case "sleep":
		name, args, want = "up__sleep", map[string]any{"millis": 1000}, "slept"
	case "sample":
		name, args, want = "asker__sample", map[string]any{"text": text}, "sampled: "+text
	default:
		panic(kind)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return err
	}
	if res.IsError || res.NeedsInput() || len(res.Content) != 1 {
		return fmt.Errorf("tools/call of %s answered %+v", name, res)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(got, want) {
		return fmt.Errorf("tools/call of %s answered %q, want %q", name, got, want)
	}
	return nil
}

// upInFlight reports whether the server "up" of the replica at addr has a
// call in flight, from its /status.
func upInFlight(addr string) bool { return upCalls(addr) > 0 }

// upCalls is how many calls the replica at addr has in flight on "up".
func upCalls(addr string) int {
	req, _ := http.NewRequest("GET", "http://"+addr+"/status", nil)
	req.Header.Set("Authorization", "Bearer "+replicaKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var doc gateway.StatusDocument
	if json.NewDecoder(resp.Body).Decode(&doc) != nil {
		return 0
	}
	for _, s := range doc.Servers {
		if s.Name == "up" {
			return s.InFlight
		}
	}
	return 0
}

const askerServer = `
server "asker" {
  command = "UPSTREAM"
  args    = ["-name", "asker"]
}
`

// TestSessionlessBehindHAProxy: 2026-07-28 clients through HAProxy, with
// deploy/haproxy.cfg, in front of three replicas. Their requests, which
// carry no session, are spread over the replicas, and every answer is
// right, calls in rounds included: the retry of a call whose upstream
// asked the client something reaches the replica that holds the call.
// Then one replica is stopped with SIGTERM while clients call through
// HAProxy, with a call in flight on it and a call in rounds waiting there
// for its client: the call in flight answers, the call in rounds gets its
// retry after HAProxy took the replica out and finishes there, later
// requests go to the others, and no request fails. Last, a round's retry
// is sent to another replica than the one that answered it, and succeeds
// there (retryElsewhere).
func TestSessionlessBehindHAProxy(t *testing.T) {
	replicas, lb, hlogs := startHA(t, askerServer)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	defer func() {
		if t.Failed() {
			t.Logf("haproxy:\n%s", hlogs)
			for _, r := range replicas {
				t.Logf("%s:\n%s", r.name, r.proc.logs)
			}
		}
	}()

	// Spread: one client, requests one after another.
	trail := &replicaTrail{base: http.DefaultTransport}
	cs := connect2026(ctx, t, lb, trail, nil)
	perReplica := map[string]int{}
	for i := range 6 {
		for _, kind := range []string{"list", "echo", "sample"} {
			n := trail.len()
			if err := call2026(ctx, cs, kind, i); err != nil {
				t.Fatalf("%s %d through HAProxy: %v (answered by %v)", kind, i, err, trail.since(n))
			}
			got := trail.since(n)
			if kind == "sample" && (len(got) != 2 || got[0].replica != got[1].replica) {
				t.Errorf("sample %d took %v: want two rounds on one replica", i, got)
			}
			for _, a := range got {
				perReplica[a.replica]++
			}
		}
	}
	for _, r := range replicas {
		if perReplica[r.name] == 0 {
			t.Errorf("%s answered none of the requests: %v", r.name, perReplica)
		}
	}
	t.Logf("18 requests (6 of them in two rounds), answered by %v", perReplica)
	if t.Failed() {
		return
	}

	// Drain: clients calling through HAProxy while mcphost2 is stopped.
	victim := replicas[1]
	type load struct {
		kind   string
		trail  *replicaTrail
		ok     int
		failed []error
	}
	loads := []*load{}
	for _, kind := range []string{"sleep", "sleep", "sleep", "echo", "list", "sample"} {
		loads = append(loads, &load{kind: kind, trail: &replicaTrail{base: http.DefaultTransport}})
	}
	// The sample client's LLM, asked in a round that the victim answered,
	// takes its time once: until the victim was signalled, HAProxy took
	// it out and its other calls are done, so that its retry must reach a
	// replica that fails /healthz, and that is still there only because it
	// waits for that retry.
	parked := make(chan struct{})
	signalled := make(chan struct{})
	var once sync.Once
	var downAt time.Time // when the slow LLM saw HAProxy take the victim out
	down := "Server mcphost/" + victim.name + " is DOWN"
	sampleTrail := loads[len(loads)-1].trail
	slowLLM := func() {
		all := sampleTrail.since(0)
		if all[len(all)-1].replica != victim.name {
			return
		}
		once.Do(func() {
			close(parked)
			select {
			case <-signalled:
			case <-time.After(10 * time.Second):
				return
			}
			for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && downAt.IsZero(); time.Sleep(20 * time.Millisecond) {
				if strings.Contains(hlogs.String(), down) {
					downAt = time.Now()
				}
			}
			// And until the victim's calls in flight are done, so that
			// only the call in rounds holds it.
			for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && upInFlight(victim.mcp); {
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(200 * time.Millisecond)
		})
	}
	stop := make(chan struct{})
	var stopOnce sync.Once
	var wg sync.WaitGroup
	halt := func() { stopOnce.Do(func() { close(stop) }); wg.Wait() }
	defer halt()
	for _, l := range loads {
		var wait func()
		if l.kind == "sample" {
			wait = slowLLM
		}
		cs := connect2026(ctx, t, lb, l.trail, wait)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
				err := call2026(cctx, cs, l.kind, i)
				cancel()
				if err != nil {
					l.failed = append(l.failed, err)
				} else {
					l.ok++
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	select {
	case <-parked:
	case <-time.After(15 * time.Second):
		t.Fatalf("no call in rounds waited on %s for 15 s", victim.name)
	}
	// The parked call in rounds is one call in flight upstream, with no
	// request open: wait for another, a request the drain must answer.
	testproc.WaitFor(t, victim.name+" to have a request in flight", 5*time.Second, func() bool { return upCalls(victim.mcp) >= 2 })
	sigAt := time.Now()
	if err := victim.proc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	close(signalled)
	select {
	case <-victim.proc.exited:
	case <-time.After(15 * time.Second):
		t.Fatalf("%s still runs 15 s after SIGTERM", victim.name)
	}
	exited := time.Now()
	if victim.proc.err != nil {
		t.Errorf("%s exited with %v after SIGTERM, want status 0", victim.name, victim.proc.err)
	}
	// Load on the two others for a while after it is gone.
	time.Sleep(2 * time.Second)
	halt()

	ok, failed, inFlight, roundsAfter, sentAfter, others := 0, 0, 0, 0, 0, 0
	for _, l := range loads {
		ok += l.ok
		failed += len(l.failed)
		for _, err := range l.failed {
			t.Errorf("a %s request failed: %v", l.kind, err)
		}
		for _, a := range l.trail.since(0) {
			switch {
			case a.replica != victim.name:
				if a.start.After(exited) {
					others++
				}
			case a.start.Before(sigAt) && a.end.After(sigAt):
				inFlight++
			case a.start.After(sigAt) && l.kind == "sample":
				roundsAfter++
			case a.start.After(sigAt):
				sentAfter++
			}
		}
	}
	if inFlight == 0 {
		t.Errorf("no request in flight on %s at SIGTERM answered", victim.name)
	}
	if downAt.IsZero() {
		t.Errorf("HAProxy did not take %s out within 5 s of SIGTERM", victim.name)
	}
	if roundsAfter == 0 {
		t.Errorf("the call in rounds waiting on %s at SIGTERM did not finish there", victim.name)
	}
	if others == 0 {
		t.Error("no request answered after the drain")
	}
	t.Logf("%s exited %v after SIGTERM; %d requests answered, %d failed; on %s: %d in flight at SIGTERM, "+
		"%d retries of calls in rounds sent after it (HAProxy took it out %v after SIGTERM), %d other requests sent after it; %d to the others after it exited",
		victim.name, exited.Sub(sigAt).Round(time.Millisecond), ok, failed, victim.name, inFlight, roundsAfter, downAt.Sub(sigAt).Round(time.Millisecond), sentAfter, others)

	// A round's retry on another replica than the one that answered it.
	retryElsewhere(t, lb, []*haReplica{replicas[0], replicas[2]})
}

// retryElsewhere: a call in rounds answers input_required on one of
// replicas (those running);
// its retry, with the replica's name in the requestState changed to
// another's, goes there through HAProxy, which runs the call again with
// the client's answer (the state opens there: the replicas share its key
// through the store) and finishes it.
func retryElsewhere(t *testing.T, lb string, replicas []*haReplica) {
	t.Helper()
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw"},"io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
	post := func(params string) (replica string, result map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+lb+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+params+`}`))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Authorization": "Bearer " + replicaKey,
			"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "asker__sample"} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if i := bytes.Index(body, []byte("data: ")); i >= 0 { // an event stream: its first message
			body = body[i+len("data: "):]
			body = body[:bytes.IndexByte(body, '\n')]
		}
		var msg struct{ Result map[string]any }
		if err := json.Unmarshal(body, &msg); err != nil || msg.Result == nil {
			t.Fatalf("%d %s: %v", resp.StatusCode, body, err)
		}
		return resp.Header.Get("X-Mcphost-Replica"), msg.Result
	}
	first, res := post(`{"name":"asker__sample","arguments":{"text":"moved"},` + meta + `}`)
	state, _ := res["requestState"].(string)
	asked, _ := res["inputRequests"].(map[string]any)
	route, sealed, ok := strings.Cut(state, ".")
	if res["resultType"] != "input_required" || len(asked) != 1 || !ok || route != first {
		t.Fatalf("the first round, on %s, answered %v", first, res)
	}
	other := replicas[0].name
	if other == first {
		other = replicas[1].name
	}
	answers := map[string]any{}
	for id := range asked {
		answers[id] = map[string]any{"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "sampled: moved"}}
	}
	retry, _ := json.Marshal(map[string]any{"name": "asker__sample", "arguments": map[string]any{"text": "moved"}, "inputResponses": answers, "requestState": other + "." + sealed})
	second, res := post(strings.Replace(string(retry), "{", "{"+meta+",", 1))
	content, _ := res["content"].([]any)
	if second != other || len(content) != 1 || !strings.Contains(fmt.Sprint(content[0]), "sampled: moved") {
		t.Fatalf("the retry sent to %s was answered by %s with %v", other, second, res)
	}
	t.Logf("a round answered by %s was retried on %s and finished there", first, second)
}

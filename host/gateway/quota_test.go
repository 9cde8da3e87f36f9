package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/quota"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// quotaObserver records what an Observer is told of calls and refusals.
type quotaObserver struct {
	mu       sync.Mutex
	outcomes []string
	refused  []string // quota/kind
}

func (o *quotaObserver) ToolCall(_, _, outcome string, _ CallTimes) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.outcomes = append(o.outcomes, outcome)
}
func (o *quotaObserver) ToolsListBuilt(time.Duration, error) {}
func (o *quotaObserver) QuotaRefused(q, kind string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.refused = append(o.refused, q+"/"+kind)
}

var (
	alice = abi.Caller{Subject: "alice", AuthMethod: abi.AuthKey, Groups: []string{"staff"}}
	bob   = abi.Caller{Subject: "bob", AuthMethod: abi.AuthKey}
)

func quotaCall(t *testing.T, h *Host, caller abi.Caller, name, args string) (string, bool) {
	t.Helper()
	res, err := h.CallTool(context.Background(), caller, name, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return text(t, res), res.IsError
}

// TestQuotaCallsPerWindow: once an identity has spent its calls of the
// window, its next call is an isError result naming the quota, the limit
// and when to retry, counted in the observer and the audit log; another
// identity and another tool are not held back.
func TestQuotaCallsPerWindow(t *testing.T) {
	obs, rec := &quotaObserver{}, &auditRecorder{}
	h := startHost(t, Config{
		Servers: []upstream.ServerConfig{stdioServer("a")},
		Quotas:  []quota.Quota{{Name: "echoes", Tools: []string{"ech*"}, Calls: 2, Window: time.Hour}},
	}, &Options{Observer: obs, Audit: &AuditOptions{Log: rec}})
	for range 2 {
		if out, isErr := quotaCall(t, h, alice, "a__echo", `{"text":"hi"}`); isErr {
			t.Fatalf("within the quota: %s", out)
		}
	}
	res, err := h.CallTool(context.Background(), alice, "a__echo", json.RawMessage(`{"text":"hi"}`))
	if err != nil || !res.IsError {
		t.Fatalf("over the quota: %v %+v, want an isError result", err, res)
	}
	out := text(t, res)
	if !strings.HasPrefix(out, `call to a__echo refused: quota "echoes" allows 2 calls per 1h; retry in `) {
		t.Errorf("refusal %q", out)
	}
	m, _ := res.Meta[QuotaMetaKey].(map[string]any)
	if m["quota"] != "echoes" || m["limit"] != quota.KindCalls || m["retryAfter"].(int64) < 1 {
		t.Errorf("_meta %v", res.Meta)
	}
	if e := rec.last(t); e.Outcome != CallQuota || e.Quota != "echoes" || e.Server != "a" || e.Tool != "echo" {
		t.Errorf("audit entry %+v", e)
	}
	obs.mu.Lock()
	if len(obs.refused) != 1 || obs.refused[0] != "echoes/calls" || obs.outcomes[len(obs.outcomes)-1] != CallQuota {
		t.Errorf("observer: refused %v, outcomes %v", obs.refused, obs.outcomes)
	}
	obs.mu.Unlock()
	if out, isErr := quotaCall(t, h, bob, "a__echo", `{"text":"hi"}`); isErr {
		t.Errorf("bob has his own budget: %s", out)
	}
	if out, isErr := quotaCall(t, h, alice, "a__pid", `{}`); isErr {
		t.Errorf("pid is not an echo: %s", out)
	}
}

// TestQuotaCountsOnlyCallsThatGoThrough: a call a policy refuses takes
// nothing from the window.
func TestQuotaCountsOnlyCallsThatGoThrough(t *testing.T) {
	h := startHost(t, Config{
		Servers: []upstream.ServerConfig{stdioServer("a")},
		Quotas:  []quota.Quota{{Name: "one", Calls: 1, Window: time.Hour}},
	}, &Options{Policy: rudePolicy{}})
	for i := range 3 {
		out, _ := quotaCall(t, h, alice, "a__echo", `{"text":"hi"}`)
		if !strings.Contains(out, "denied") {
			t.Fatalf("call %d: %q, want the policy's denial (a denied call must not spend the quota)", i, out)
		}
	}
}

// TestQuotaConcurrent: with two sleeping calls in flight a third is
// refused; a slot comes back when a call ends, whether it was answered,
// cancelled or timed out.
func TestQuotaConcurrent(t *testing.T) {
	srv := stdioServer("a")
	srv.Timeout = 2 * time.Second
	obs := &quotaObserver{}
	h := startHost(t, Config{
		Servers: []upstream.ServerConfig{srv},
		Quotas:  []quota.Quota{{Name: "two", Concurrent: 2, Subjects: []string{"alice"}}},
	}, &Options{Observer: obs})

	// refused waits until alice's quick call is refused: both sleeps are
	// then in flight. A quick call that goes through before that is
	// answered at once and frees its slot.
	done := make(chan string, 2)
	refused := func() string {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if out, isErr := quotaCall(t, h, alice, "a__echo", `{"text":"hi"}`); isErr {
				return out
			}
		}
		select {
		case got := <-done:
			t.Fatalf("the third call was never refused; a sleep ended: %q", got)
		default:
		}
		t.Fatal("the third call was never refused")
		return ""
	}
	ctx, cancel := context.WithCancel(context.Background())
	// sleep calls until it is let through (refused while a probe holds a
	// slot) when retry is set, then sleeps.
	sleep := func(ctx context.Context, millis int, retry bool) {
		for deadline := time.Now().Add(20 * time.Second); ; {
			if time.Now().After(deadline) {
				done <- "never let through"
				return
			}
			res, err := h.CallTool(ctx, alice, "a__sleep", json.RawMessage(`{"millis":`+itoa(millis)+`}`))
			if err != nil {
				done <- err.Error()
				return
			}
			if out := text(t, res); !retry || !strings.Contains(out, `refused: quota "two"`) {
				done <- out
				return
			}
		}
	}
	go sleep(ctx, 60_000, true)         // cancelled below
	go sleep(t.Context(), 60_000, true) // times out after the server's 2s
	out := refused()
	if !strings.Contains(out, `quota "two" allows 2 calls at once; retry in 1s`) {
		t.Errorf("refusal %q", out)
	}
	if out, isErr := quotaCall(t, h, bob, "a__echo", `{"text":"hi"}`); isErr {
		t.Errorf("bob is not under the quota: %s", out)
	}
	cancel()
	if got := <-done; !strings.Contains(got, "cancel") {
		t.Errorf("cancelled sleep: %q", got)
	}
	// The cancelled call's slot is back: one call fits, not two.
	if out, isErr := quotaCall(t, h, alice, "a__echo", `{"text":"hi"}`); isErr {
		t.Fatalf("after a cancel: %s", out)
	}
	if got := <-done; !strings.Contains(got, "timed out") {
		t.Errorf("sleep past the timeout: %q", got)
	}
	// Both slots are back: two sleeps started together, with no probe
	// beside them, both go through.
	go sleep(t.Context(), 1500, false)
	go sleep(t.Context(), 1500, false)
	for range 2 {
		if got := <-done; got != "slept" {
			t.Errorf("a slot was not given back: %q", got)
		}
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	for _, r := range obs.refused {
		if r != "two/concurrent" {
			t.Errorf("refusal counted as %s", r)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestQuotaReload: a reload keeps the counters of unchanged quotas and the
// slots of calls in flight; a changed quota starts afresh; removing every
// quota lets everything through.
func TestQuotaReload(t *testing.T) {
	cfg := Config{
		Servers: []upstream.ServerConfig{stdioServer("a")},
		Quotas: []quota.Quota{
			{Name: "calls", Calls: 1, Window: time.Hour, Tools: []string{"echo"}},
			{Name: "slots", Concurrent: 1, Tools: []string{"sleep"}},
		},
	}
	h := startHost(t, cfg, nil)
	quotaCall(t, h, alice, "a__echo", `{"text":"hi"}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); { // until a probe below does not hold the slot
			res, err := h.CallTool(ctx, alice, "a__sleep", json.RawMessage(`{"millis":60000}`))
			if err != nil || !strings.Contains(text(t, res), `refused: quota "slots"`) {
				return
			}
		}
	}()
	waitRefused := func(name, args, quotaName string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
			if out, isErr := quotaCall(t, h, alice, name, args); isErr {
				if !strings.Contains(out, `quota "`+quotaName+`"`) {
					t.Fatalf("%s: %q, want refused by %s", name, out, quotaName)
				}
				return
			}
		}
		t.Fatalf("%s was never refused by %s", name, quotaName)
	}
	waitRefused("a__sleep", `{"millis":1}`, "slots")

	next := cfg
	next.Quotas = append(append([]quota.Quota(nil), cfg.Quotas...), quota.Quota{Name: "new", Calls: 100, Window: time.Minute})
	if err := h.Reconfigure(context.Background(), next, nil); err != nil {
		t.Fatal(err)
	}
	if out, isErr := quotaCall(t, h, alice, "a__echo", `{"text":"hi"}`); !isErr || !strings.Contains(out, `quota "calls"`) {
		t.Errorf("after a reload that kept the quota: %q, want still spent", out)
	}
	if out, isErr := quotaCall(t, h, alice, "a__sleep", `{"millis":1}`); !isErr || !strings.Contains(out, `quota "slots"`) {
		t.Errorf("after a reload, with a sleep in flight: %q, want refused", out)
	}
	cancel()
	<-done // its slot is released into the carried-over counter
	if out, isErr := quotaCall(t, h, alice, "a__sleep", `{"millis":1}`); isErr {
		t.Errorf("after the sleep ended: %s", out)
	}

	next.Quotas[0].Calls = 2 // changed: starts afresh
	if err := h.Reconfigure(context.Background(), next, nil); err != nil {
		t.Fatal(err)
	}
	if out, isErr := quotaCall(t, h, alice, "a__echo", `{"text":"hi"}`); isErr {
		t.Errorf("after the quota changed: %s", out)
	}
	next.Quotas = nil
	if err := h.Reconfigure(context.Background(), next, nil); err != nil {
		t.Fatal(err)
	}
	if h.quotas.Load() != nil {
		t.Error("no quotas must leave the call path without a limiter")
	}
	bad := next
	bad.Quotas = []quota.Quota{{Name: "x"}, {Name: "x", Calls: 1}}
	if err := h.Reconfigure(context.Background(), bad, nil); err == nil || !strings.Contains(err.Error(), "duplicate quota name") || !strings.Contains(err.Error(), "sets neither") {
		t.Errorf("invalid quotas: %v", err)
	}
}

// BenchmarkToolCallQuota is a call through the host (in process, a stdio
// upstream's echo) without quotas, with quotas that do not apply to it,
// and with one it counts against: the first two take no lock and
// allocate nothing more than a call does.
func BenchmarkToolCallQuota(b *testing.B) {
	for _, c := range []struct {
		name   string
		quotas []quota.Quota
	}{
		{"none", nil},
		{"other", []quota.Quota{{Name: "q", Calls: 1, Window: time.Minute, Servers: []string{"elsewhere"}}}},
		{"counted", []quota.Quota{{Name: "q", Calls: quota.MaxCalls, Window: time.Hour, Concurrent: 4}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			h := startHost(b, Config{Servers: []upstream.ServerConfig{stdioServer("a")}, Quotas: c.quotas}, nil)
			args := json.RawMessage(`{"text":"hi"}`)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := h.callTool(ctx, alice, "a__echo", args, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				if r, ok := res.(*mcp.CallToolResult); ok && r.IsError {
					b.Fatal(r)
				}
			}
		})
	}
}

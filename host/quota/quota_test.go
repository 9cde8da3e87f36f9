package quota

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	t0 = time.Unix(1_800_000_000, 0) // on a minute boundary
	bg = context.Background()
)

func TestCallsPerWindow(t *testing.T) {
	l := New([]Quota{{Name: "q", Calls: 2, Window: time.Minute}}, nil)
	alice := Who{Subject: "alice", Method: "key"}
	for i := range 2 {
		if _, r := l.Acquire(bg, t0.Add(time.Duration(i)*time.Second), alice, "s", "t"); r != nil {
			t.Fatalf("call %d refused: %v", i, r)
		}
	}
	_, r := l.Acquire(bg, t0.Add(45*time.Second), alice, "s", "t")
	if r == nil || r.Quota != "q" || r.Kind != KindCalls || r.RetrySeconds() != 15 {
		t.Fatalf("third call: %+v, want refused by q's calls, retry in 15s", r)
	}
	if want := `quota "q" allows 2 calls per 1m; retry in 15s`; r.Message() != want {
		t.Errorf("message %q, want %q", r.Message(), want)
	}
	// Another identity has its own budget; the next window starts afresh.
	if _, r := l.Acquire(bg, t0.Add(45*time.Second), Who{Subject: "bob", Method: "key"}, "s", "t"); r != nil {
		t.Errorf("bob refused: %v", r)
	}
	if _, r := l.Acquire(bg, t0.Add(time.Minute), alice, "s", "t"); r != nil {
		t.Errorf("alice refused in the next window: %v", r)
	}
}

func TestConcurrent(t *testing.T) {
	l := New([]Quota{{Name: "c", Concurrent: 2}}, nil)
	who := Who{Subject: "alice"}
	a, _ := l.Acquire(bg, t0, who, "s", "t")
	b, _ := l.Acquire(bg, t0, who, "s", "t")
	if _, r := l.Acquire(bg, t0, who, "s", "t"); r == nil || r.Kind != KindConcurrent || !strings.Contains(r.Message(), "2 calls at once") {
		t.Fatalf("third at once: %v, want refused by concurrent", r)
	}
	a.Release()
	c, r := l.Acquire(bg, t0, who, "s", "t")
	if r != nil {
		t.Fatalf("after a release: %v", r)
	}
	b.Release()
	c.Release()
}

// A call one quota refuses counts in none of the others, and a refunded
// call leaves the window as it was.
func TestRefusedAndRefundedCountNowhere(t *testing.T) {
	l := New([]Quota{
		{Name: "wide", Calls: 3, Window: time.Minute},
		{Name: "narrow", Calls: 1, Window: time.Minute, Tools: []string{"write*"}},
	}, nil)
	who := Who{Subject: "alice"}
	if _, r := l.Acquire(bg, t0, who, "s", "write_file"); r != nil {
		t.Fatal(r)
	}
	for range 5 {
		if _, r := l.Acquire(bg, t0, who, "s", "write_file"); r == nil || r.Quota != "narrow" {
			t.Fatalf("got %v, want refused by narrow", r)
		}
	}
	tk, r := l.Acquire(bg, t0, who, "s", "read_file")
	if r != nil {
		t.Fatalf("read refused: %v (refusals were counted in wide)", r)
	}
	tk.Refund()
	tk.Release()
	for i := range 2 {
		if _, r := l.Acquire(bg, t0, who, "s", "read_file"); r != nil {
			t.Fatalf("read %d refused: %v (the refund did not give the call back)", i, r)
		}
	}
	if _, r := l.Acquire(bg, t0, who, "s", "read_file"); r == nil || r.Quota != "wide" {
		t.Fatalf("got %v, want wide spent", r)
	}
}

func TestMatching(t *testing.T) {
	q := Quota{Subjects: []string{"alice"}, Groups: []string{"interns"}, Servers: []string{"gh"}, Tools: []string{"create_*", "delete"}}
	for _, c := range []struct {
		who          Who
		server, tool string
		want         bool
	}{
		{Who{Subject: "alice"}, "gh", "create_issue", true},
		{Who{Subject: "bob", Groups: []string{"staff", "interns"}}, "gh", "delete", true},
		{Who{Subject: "bob"}, "gh", "delete", false},
		{Who{}, "gh", "delete", false},
		{Who{Subject: "alice"}, "fs", "create_issue", false},
		{Who{Subject: "alice"}, "gh", "list_issues", false},
		{Who{Subject: "alice"}, "gh", "deleted", false},
	} {
		if got := q.matches(&c.who, c.server, c.tool); got != c.want {
			t.Errorf("%+v %s %s: %v, want %v", c.who, c.server, c.tool, got, c.want)
		}
	}
	if !(&Quota{}).matches(&Who{}, "any", "thing") {
		t.Error("an empty quota must match every call")
	}
}

// Per quota: every caller it matches shares the one budget; callers
// without an identity share one per subject too.
func TestPerQuotaAndAnonymous(t *testing.T) {
	l := New([]Quota{{Name: "shared", Calls: 1, Window: time.Minute, Per: PerQuota, Groups: []string{"g"}}}, nil)
	if _, r := l.Acquire(bg, t0, Who{Subject: "a", Groups: []string{"g"}}, "s", "t"); r != nil {
		t.Fatal(r)
	}
	if _, r := l.Acquire(bg, t0, Who{Subject: "b", Groups: []string{"g"}}, "s", "t"); r == nil {
		t.Fatal("b was not refused: the quota's budget is shared")
	}
	l = New([]Quota{{Name: "anon", Calls: 1, Window: time.Minute}}, nil)
	l.Acquire(bg, t0, Who{}, "s", "t")
	if _, r := l.Acquire(bg, t0, Who{}, "s", "t"); r == nil {
		t.Fatal("callers without an identity must share one budget")
	}
}

// A reload keeps the counters of unchanged quotas and the slots of calls
// in flight; a changed quota starts afresh.
func TestNewCarriesOver(t *testing.T) {
	a := Quota{Name: "a", Calls: 1, Window: time.Minute}
	b := Quota{Name: "b", Concurrent: 1}
	l1 := New([]Quota{a, b}, nil)
	who := Who{Subject: "alice"}
	inflight, r := l1.Acquire(bg, t0, who, "s", "t")
	if r != nil {
		t.Fatal(r)
	}
	l2 := New([]Quota{b, a}, l1)
	if _, r := l2.Acquire(bg, t0, who, "s", "t"); r == nil {
		t.Fatal("counters did not carry over a reload")
	}
	inflight.Release() // taken under l1, freed into the carried counters
	a.Calls = 2
	l3 := New([]Quota{a, b}, l2)
	if _, r := l3.Acquire(bg, t0, who, "s", "t"); r != nil {
		t.Fatalf("after the release and a's change: %v", r)
	}
	if New(nil, l3) != nil {
		t.Error("no quotas must be a nil Limiter")
	}
	var none *Limiter
	if tk, r := none.Acquire(bg, t0, who, "s", "t"); tk != nil || r != nil {
		t.Error("a nil Limiter must let everything through")
	}
}

func TestSweep(t *testing.T) {
	l := New([]Quota{{Name: "q", Calls: 1, Window: time.Minute}}, nil)
	for i := range 3 * minSweep {
		l.Acquire(bg, t0.Add(time.Duration(i/minSweep)*time.Minute), Who{Subject: strings.Repeat("x", i%50) + string(rune('a'+i%26)) + time.Duration(i).String()}, "s", "t")
	}
	if n := len(l.rules[0].counters); n > 2*minSweep {
		t.Errorf("%d counters kept, want stale ones swept", n)
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		q     Quota
		field string
	}{
		{Quota{Name: "n"}, "calls"},
		{Quota{Name: "bad name", Calls: 1}, "name"},
		{Quota{Name: "n", Calls: 1, Window: 500 * time.Millisecond}, "window"},
		{Quota{Name: "n", Calls: 1, Window: 1500 * time.Millisecond}, "window"},
		{Quota{Name: "n", Concurrent: 1, Window: time.Minute}, "window"},
		{Quota{Name: "n", Calls: -1}, "calls"},
		{Quota{Name: "n", Calls: 1, Per: "tool"}, "per"},
		{Quota{Name: "n", Calls: 1, Tools: []string{""}}, "tools"},
	} {
		ps := c.q.Check()
		if len(ps) == 0 || ps[0].Field != c.field {
			t.Errorf("%+v: %v, want a problem with %s", c.q, ps, c.field)
		}
	}
	if ps := (Quota{Name: "ok", Calls: 60, Concurrent: 4}).Check(); ps != nil {
		t.Errorf("valid quota: %v", ps)
	}
}

// Hammer: many goroutines against one concurrent limit never have more
// calls in flight than it allows, and every slot comes back.
func TestConcurrentHammer(t *testing.T) {
	l := New([]Quota{{Name: "c", Concurrent: 3}}, nil)
	var mu sync.Mutex
	inflight, most := 0, 0
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 500 {
				tk, r := l.Acquire(bg, t0, Who{Subject: "a"}, "s", "t")
				if r != nil {
					continue
				}
				mu.Lock()
				inflight++
				most = max(most, inflight)
				mu.Unlock()
				mu.Lock()
				inflight--
				mu.Unlock()
				tk.Release()
			}
		}()
	}
	wg.Wait()
	if most > 3 {
		t.Errorf("%d calls in flight at once, limit 3", most)
	}
	if c := l.rules[0].counters[":a"]; c == nil || c.inflight != 0 {
		t.Errorf("slots left taken: %+v", c)
	}
}

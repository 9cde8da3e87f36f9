package quota

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"
)

// Who is the caller a Limiter counts: its identity as authentication
// established it (all empty for a caller without one).
type Who struct {
	Subject string
	Method  string // how it authenticated (key, oauth, config)
	Groups  []string
}

// Refusal is a call a quota stopped: which quota, which of its limits, and
// when the caller may try again.
type Refusal struct {
	Quota string
	Kind  string // KindCalls or KindConcurrent
	// Limit says what the quota lets through ("60 calls per 1m").
	Limit string
	// RetryAfter is when the window ends, for KindCalls; for
	// KindConcurrent, a second (a slot frees when a call ends, which no
	// one can tell).
	RetryAfter time.Duration
}

// RetrySeconds is RetryAfter in whole seconds, rounded up, at least 1.
func (r *Refusal) RetrySeconds() int64 {
	s := int64((r.RetryAfter + time.Second - 1) / time.Second)
	return max(s, 1)
}

// Message is the refusal as a caller is told it.
func (r *Refusal) Message() string {
	if r.Kind == KindConcurrent {
		return fmt.Sprintf("quota %q allows %s; retry in %ds, once one of them has ended", r.Quota, r.Limit, r.RetrySeconds())
	}
	return fmt.Sprintf("quota %q allows %s; retry in %ds", r.Quota, r.Limit, r.RetrySeconds())
}

func (r *Refusal) Error() string { return "quota: " + r.Message() }

// Limiter counts calls against a set of quotas. It is safe for concurrent
// use. A nil *Limiter has no quotas: Acquire lets everything through.
type Limiter struct {
	// mu guards every counter; Limiters built one from another share it,
	// since a ticket taken under one may be released under the next.
	mu    *sync.Mutex
	rules []*rule
}

// rule is one quota and its budgets.
type rule struct {
	q        Quota
	counters map[string]*counter // budget key (identity, or "" per quota) -> counter
	sweepAt  int                 // sweep stale counters when there are this many
}

// counter is one budget's state.
type counter struct {
	window   int64 // start of the current window, Unix nanoseconds
	calls    int   // calls counted in that window
	inflight int   // calls in flight, for a quota with Concurrent
}

const minSweep = 1024

// New builds a Limiter for quotas, which must have passed Check (in
// order: the first quota that refuses a call is the one named). Counters
// of a quota in prev with the same name and definition carry over; those
// of removed or changed quotas are dropped (calls in flight under them
// release into the old counters). New returns nil for no quotas.
func New(quotas []Quota, prev *Limiter) *Limiter {
	if len(quotas) == 0 {
		return nil
	}
	l := &Limiter{mu: new(sync.Mutex)}
	var old map[string]*rule
	if prev != nil {
		l.mu = prev.mu
		old = make(map[string]*rule, len(prev.rules))
		for _, r := range prev.rules {
			old[r.q.Name] = r
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, q := range quotas {
		q = q.WithDefaults()
		if r, ok := old[q.Name]; ok && reflect.DeepEqual(r.q, q) {
			l.rules = append(l.rules, r)
			continue
		}
		l.rules = append(l.rules, &rule{q: q, counters: map[string]*counter{}, sweepAt: minSweep})
	}
	return l
}

// Quotas returns the quotas l holds, defaults applied.
func (l *Limiter) Quotas() []Quota {
	if l == nil {
		return nil
	}
	out := make([]Quota, len(l.rules))
	for i, r := range l.rules {
		out[i] = r.q
	}
	return out
}

// Ticket is what a call that went through holds: its place in each
// quota's window and its slot in each concurrent limit. Release frees the
// slots when the call ends; Refund also takes the call back out of the
// windows, for a call that went no further (a policy refused it).
type Ticket struct {
	l     *Limiter
	taken []taken
}

type taken struct {
	c          *counter
	window     int64 // the window the call was counted in; -1 if not counted
	concurrent bool
}

// matches reports whether q applies to who's call of tool at server.
func (q *Quota) matches(who *Who, server, tool string) bool {
	if len(q.Subjects) > 0 || len(q.Groups) > 0 {
		in := who.Subject != "" && slices.Contains(q.Subjects, who.Subject)
		for _, g := range who.Groups {
			if in {
				break
			}
			in = slices.Contains(q.Groups, g)
		}
		if !in {
			return false
		}
	}
	if len(q.Servers) > 0 && !slices.Contains(q.Servers, server) {
		return false
	}
	if len(q.Tools) > 0 {
		for _, t := range q.Tools {
			if match(t, tool) {
				return true
			}
		}
		return false
	}
	return true
}

// key is the budget who's call counts against.
func (r *rule) key(who *Who) string {
	if r.q.Per == PerQuota || who.Subject == "" {
		return ""
	}
	return who.Method + ":" + who.Subject
}

// Acquire counts who's call of tool at server against every quota that
// applies, or refuses it with the first quota whose limit it would pass;
// a refused call counts in none. A call no quota applies to gets a nil
// Ticket (whose methods do nothing), without taking the lock.
func (l *Limiter) Acquire(now time.Time, who Who, server, tool string) (*Ticket, *Refusal) {
	if l == nil {
		return nil, nil
	}
	var buf [8]*rule
	apply := buf[:0]
	for _, r := range l.rules {
		if r.q.matches(&who, server, tool) {
			apply = append(apply, r)
		}
	}
	if len(apply) == 0 {
		return nil, nil
	}
	ns := now.UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	cs := make([]*counter, len(apply))
	for i, r := range apply {
		c := r.counter(r.key(&who), ns)
		cs[i] = c
		if r.q.Calls > 0 && c.calls >= r.q.Calls {
			return nil, &Refusal{Quota: r.q.Name, Kind: KindCalls, Limit: r.q.Describe(KindCalls),
				RetryAfter: time.Duration(c.window + int64(r.q.Window) - ns)}
		}
		if r.q.Concurrent > 0 && c.inflight >= r.q.Concurrent {
			return nil, &Refusal{Quota: r.q.Name, Kind: KindConcurrent, Limit: r.q.Describe(KindConcurrent), RetryAfter: time.Second}
		}
	}
	t := &Ticket{l: l, taken: make([]taken, len(apply))}
	for i, r := range apply {
		c := cs[i]
		t.taken[i] = taken{c: c, window: -1, concurrent: r.q.Concurrent > 0}
		if r.q.Calls > 0 {
			c.calls++
			t.taken[i].window = c.window
		}
		if r.q.Concurrent > 0 {
			c.inflight++
		}
	}
	return t, nil
}

// counter is key's counter, its window moved to the one ns falls in; l.mu
// held.
func (r *rule) counter(key string, ns int64) *counter {
	c := r.counters[key]
	if c == nil {
		if len(r.counters) >= r.sweepAt {
			r.sweep(ns)
		}
		c = &counter{}
		r.counters[key] = c
	}
	if w := int64(r.q.Window); w > 0 {
		if start := ns - ns%w; start != c.window {
			c.window, c.calls = start, 0
		}
	}
	return c
}

// sweep drops the counters that hold nothing (their window past, no call
// in flight), so that a quota per subject does not keep every identity it
// ever saw; l.mu held. It runs when the map has doubled since the last.
func (r *rule) sweep(ns int64) {
	w := int64(r.q.Window)
	for k, c := range r.counters {
		if c.inflight == 0 && (w == 0 || c.window+w <= ns) {
			delete(r.counters, k)
		}
	}
	r.sweepAt = max(minSweep, 2*len(r.counters))
}

// Release frees the call's concurrent slots; call it once, when the call
// has ended (answered, failed, cancelled or timed out).
func (t *Ticket) Release() {
	if t == nil {
		return
	}
	t.l.mu.Lock()
	defer t.l.mu.Unlock()
	for _, tk := range t.taken {
		if tk.concurrent {
			tk.c.inflight--
		}
	}
}

// Refund takes the call back out of the windows it was counted in (if
// they have not moved on since): a call that went no further than the
// gateway counts in no window. It does not free slots: Release still must
// be called.
func (t *Ticket) Refund() {
	if t == nil {
		return
	}
	t.l.mu.Lock()
	defer t.l.mu.Unlock()
	for i, tk := range t.taken {
		if tk.window >= 0 && tk.c.window == tk.window && tk.c.calls > 0 {
			tk.c.calls--
		}
		t.taken[i].window = -1
	}
}

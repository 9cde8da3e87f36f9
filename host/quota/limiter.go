package quota

import (
	"context"
	"fmt"
	"hash/fnv"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/mcphost-project/mcphost/host/internal/glob"
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

// Windows shares the counts of calls per window among replicas: a store
// they all use. Its methods are called on the call's path, outside the
// Limiter's lock.
type Windows interface {
	// Take counts one call in the window that starts at start (Unix
	// nanoseconds) of quota (the quota's name and the digest of its
	// definition) and key (the budget), if fewer than limit are counted
	// there, and reports whether it did; the window may be forgotten
	// after expires.
	Take(ctx context.Context, quota, key string, start, expires int64, limit int) (bool, error)
	// GiveBack takes one call back out of that window.
	GiveBack(ctx context.Context, quota, key string, start int64) error
}

// Limiter counts calls against a set of quotas. It is safe for concurrent
// use. A nil *Limiter has no quotas: Acquire lets everything through.
type Limiter struct {
	// mu guards every counter; Limiters built one from another share it,
	// since a ticket taken under one may be released under the next.
	mu    *sync.Mutex
	rules []*rule
	// shared, when set, holds the windows of calls as every replica
	// counts them; the local counters still count this replica's calls,
	// which decide alone when shared fails (onShareError is told).
	shared       Windows
	onShareError func(error)
}

// rule is one quota and its budgets.
type rule struct {
	q        Quota
	id       string              // the quota's name and a digest of its definition, for shared windows
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
	return NewShared(quotas, prev, nil, nil)
}

// NewShared is New with windows shared through w (nil: not shared): a
// call is let through only if w, too, has room for it in each window, and
// a failure of w (told to onError, which may be nil) leaves the decision
// to this replica's counts. Concurrent calls are counted per replica.
func NewShared(quotas []Quota, prev *Limiter, w Windows, onError func(error)) *Limiter {
	if len(quotas) == 0 {
		return nil
	}
	if onError == nil {
		onError = func(error) {}
	}
	l := &Limiter{mu: new(sync.Mutex), shared: w, onShareError: onError}
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
		h := fnv.New64a()
		fmt.Fprintf(h, "%#v", q)
		l.rules = append(l.rules, &rule{q: q, id: fmt.Sprintf("%s:%x", q.Name, h.Sum64()), counters: map[string]*counter{}, sweepAt: minSweep})
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
	rules []*rule // parallel to taken
}

type taken struct {
	c          *counter
	window     int64 // the window the call was counted in; -1 if not counted
	concurrent bool
	shared     string // the rule's id, when the call is counted in a shared window too
	key        string
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
			if glob.Match(t, tool) {
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
// Ticket (whose methods do nothing), without taking the lock. ctx bounds
// the shared windows' part.
func (l *Limiter) Acquire(ctx context.Context, now time.Time, who Who, server, tool string) (*Ticket, *Refusal) {
	t, r := l.acquireLocal(now, who, server, tool)
	if t == nil || l.shared == nil {
		return t, r
	}
	// The shared windows, in the quotas' order: the first without room
	// refuses, and the windows taken before it are given back.
	for i := range t.taken {
		tk := &t.taken[i]
		if tk.window < 0 {
			continue
		}
		r := t.rules[i]
		ok, err := l.shared.Take(ctx, r.id, tk.key, tk.window, tk.window+int64(r.q.Window), r.q.Calls)
		if err != nil {
			l.onShareError(err)
			continue // this replica's count decides
		}
		if !ok {
			end := tk.window + int64(r.q.Window)
			t.Refund() // the local counts, and the shared windows taken before this one
			t.Release()
			return nil, &Refusal{Quota: r.q.Name, Kind: KindCalls, Limit: r.q.Describe(KindCalls), RetryAfter: time.Duration(end - now.UnixNano())}
		}
		tk.shared = r.id
	}
	return t, nil
}

func (l *Limiter) acquireLocal(now time.Time, who Who, server, tool string) (*Ticket, *Refusal) {
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
	if l.shared != nil {
		t.rules = slices.Clone(apply)
	}
	for i, r := range apply {
		c := cs[i]
		t.taken[i] = taken{c: c, window: -1, concurrent: r.q.Concurrent > 0}
		if l.shared != nil {
			t.taken[i].key = r.key(&who)
		}
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
// they have not moved on since), shared ones too: a call that went no
// further than the gateway counts in no window. It does not free slots:
// Release still must be called.
func (t *Ticket) Refund() {
	if t == nil {
		return
	}
	var giveBack []taken
	t.l.mu.Lock()
	for i, tk := range t.taken {
		if tk.window >= 0 && tk.c.window == tk.window && tk.c.calls > 0 {
			tk.c.calls--
		}
		if tk.shared != "" {
			giveBack = append(giveBack, tk)
		}
		t.taken[i].window, t.taken[i].shared = -1, ""
	}
	t.l.mu.Unlock()
	if len(giveBack) == 0 {
		return
	}
	// Not the call's context, which may be why it ended.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tk := range giveBack {
		if err := t.l.shared.GiveBack(ctx, tk.shared, tk.key, tk.window); err != nil {
			t.l.onShareError(err)
		}
	}
}

package sessionless

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"
)

// Parked are the calls in rounds that wait on this replica for their
// clients' retries, by name (a State's Call), and the names of the states
// used here. T is the gateway's call. The zero value needs States and
// Timeout set before use.
type Parked[T comparable] struct {
	States  *States       // seals the states Park returns and opens retries'
	Timeout time.Duration // how long a call waits for its retry before it is cancelled

	mu   sync.Mutex
	m    map[string]parked[T]
	used map[string]time.Time // name -> when its state has expired for sure
}

type parked[T comparable] struct {
	call   T
	cancel func()
}

// Park keeps call until its client comes back with the returned state (st,
// given a new name and its expiry, sealed), or for Timeout, after which
// cancel is called. The state starts with route and a dot when route is
// not "".
func (p *Parked[T]) Park(call T, cancel func(), route string, st *State) (string, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	st.Call, st.Expires = hex.EncodeToString(b[:]), time.Now().Add(p.Timeout).Unix()
	state, err := p.States.Seal(route, st)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	if p.m == nil {
		p.m = make(map[string]parked[T])
	}
	p.m[st.Call] = parked[T]{call, cancel}
	p.mu.Unlock()
	time.AfterFunc(p.Timeout, func() {
		if got := p.Take(st.Call); got == call {
			cancel()
		}
	})
	return state, nil
}

// Open returns what a retry's state carries (States.Open, now).
func (p *Parked[T]) Open(state string) (*State, error) { return p.States.Open(state, time.Now()) }

// Use records that the state of the call named name was used here, and
// reports whether it had been already: a state is good for one retry on
// each replica.
func (p *Parked[T]) Use(name string) (again bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if _, again = p.used[name]; again {
		return true
	}
	if p.used == nil {
		p.used = map[string]time.Time{}
	}
	for n, exp := range p.used {
		if now.After(exp) {
			delete(p.used, n)
		}
	}
	p.used[name] = now.Add(p.Timeout + time.Minute)
	return false
}

// Take removes the call named name and returns it (the zero T for none).
func (p *Parked[T]) Take(name string) T {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.m[name]
	delete(p.m, name)
	return c.call
}

// CancelAll cancels every waiting call (the host is closing).
func (p *Parked[T]) CancelAll() {
	p.mu.Lock()
	m := p.m
	p.m = nil
	p.mu.Unlock()
	for _, c := range m {
		c.cancel()
	}
}

// Waiting reports how many calls wait for their clients' next round.
func (p *Parked[T]) Waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}

package gateway

import (
	"context"
	"crypto/rand"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/upstream"
)

// progressRouter maps the progress tokens mcphost sends upstream to the
// downstream session and token of the call they belong to. Downstream
// tokens are only unique per client, so they are never sent upstream as is.
// A token is unguessable and bound to the upstream it was sent to: an
// upstream cannot send progress into a call it was not given, another
// server's or another user's.
type progressRouter struct {
	mu sync.Mutex
	m  map[string]progressTarget
}

type progressTarget struct {
	upstream *upstream.Server // the only one that may report on it
	session  *mcp.ServerSession
	token    any
	ctx      context.Context // the downstream call's: progress goes on its stream
}

func (r *progressRouter) init() { r.m = make(map[string]progressTarget) }

// register returns the token to send to u and a func that forgets it.
func (r *progressRouter) register(ctx context.Context, u *upstream.Server, ss *mcp.ServerSession, token any) (string, func()) {
	up := "mcphost-" + rand.Text() // 128 random bits
	r.mu.Lock()
	r.m[up] = progressTarget{upstream: u, session: ss, token: token, ctx: ctx}
	r.mu.Unlock()
	return up, func() {
		r.mu.Lock()
		delete(r.m, up)
		r.mu.Unlock()
	}
}

// lookup finds the call that token was given to u for.
func (r *progressRouter) lookup(u *upstream.Server, token any) (progressTarget, bool) {
	s, ok := token.(string)
	if !ok {
		return progressTarget{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.m[s]
	if !ok || t.upstream != u {
		return progressTarget{}, false
	}
	return t, true
}

package host

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressRouter maps the progress tokens mcphost sends upstream to the
// downstream session and token of the call they belong to. Downstream
// tokens are only unique per client, so they are never sent upstream as is.
type progressRouter struct {
	next atomic.Uint64
	mu   sync.Mutex
	m    map[string]progressTarget
}

type progressTarget struct {
	session *mcp.ServerSession
	token   any
	ctx     context.Context // the downstream call's: progress goes on its stream
}

func (r *progressRouter) init() { r.m = make(map[string]progressTarget) }

// register returns the token to send upstream and a func that forgets it.
func (r *progressRouter) register(ctx context.Context, ss *mcp.ServerSession, token any) (string, func()) {
	up := fmt.Sprintf("mcphost-%d", r.next.Add(1))
	r.mu.Lock()
	r.m[up] = progressTarget{session: ss, token: token, ctx: ctx}
	r.mu.Unlock()
	return up, func() {
		r.mu.Lock()
		delete(r.m, up)
		r.mu.Unlock()
	}
}

func (r *progressRouter) lookup(token any) (progressTarget, bool) {
	s, ok := token.(string)
	if !ok {
		return progressTarget{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.m[s]
	return t, ok
}

package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrTooManySessions is returned (wrapped) when a per_client server already
// has MaxSessions upstream sessions, all of them busy.
var ErrTooManySessions = errors.New("too many client sessions")

// clientConn is one per-client upstream session: its own connection (and,
// for stdio, its own process) serving exactly one downstream session. It
// ends with the downstream session, when idle for the server's idle
// timeout, or when evicted to make room for another client.
type clientConn struct {
	owner    *mcp.ServerSession
	ready    chan struct{} // closed once the connect attempt ended
	client   *mcp.Client   // mirrors the owner's capabilities
	cs       *mcp.ClientSession
	err      error
	inflight int
	lastUsed time.Time
	idle     *time.Timer
}

// clientCaps mirrors what the downstream client offers, so a per-client
// server sees the capabilities of the client it actually serves.
func clientCaps(ss *mcp.ServerSession) *mcp.ClientCapabilities {
	caps := &mcp.ClientCapabilities{}
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil {
		return caps
	}
	in := ip.Capabilities
	caps.Sampling = in.Sampling
	caps.Elicitation = in.Elicitation
	if in.RootsV2 != nil {
		caps.RootsV2 = in.RootsV2
	} else if in.Roots.ListChanged {
		caps.RootsV2 = &mcp.RootCapabilities{ListChanged: true}
	}
	return caps
}

// session returns the session to use for a request from ss: the shared one,
// or with sessions = "per_client" ss's own, connecting it on demand. The
// returned func marks the request done.
func (u *upstream) sessionFor(ctx context.Context, ss *mcp.ServerSession) (*mcp.ClientSession, func(), error) {
	if u.cfg.Sessions != SessionsPerClient || ss == nil {
		cs, err := u.session(ctx)
		return cs, func() {}, err
	}
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil, nil, ErrClosed
	}
	c := u.clients[ss]
	var evicted *clientConn
	if c == nil {
		if len(u.clients) >= u.cfg.MaxSessions {
			evicted = u.evictLocked()
			if evicted == nil {
				u.mu.Unlock()
				return nil, nil, fmt.Errorf("%w: server %q has %d per-client sessions, all busy (max_sessions)", ErrTooManySessions, u.cfg.Name, u.cfg.MaxSessions)
			}
		}
		c = &clientConn{owner: ss, ready: make(chan struct{})}
		u.clients[ss] = c
		u.wg.Add(1)
		go u.connectClient(c)
	}
	c.inflight++
	c.lastUsed = time.Now()
	if c.idle != nil {
		c.idle.Stop()
	}
	u.mu.Unlock()
	if evicted != nil {
		u.log.Info("per-client session evicted to make room", "max_sessions", u.cfg.MaxSessions)
		u.closeClients([]*clientConn{evicted})
	}

	done := func() { u.releaseClient(c) }
	select {
	case <-c.ready:
	case <-ctx.Done():
		done()
		return nil, nil, ctx.Err()
	}
	if c.err != nil {
		done()
		return nil, nil, c.err
	}
	return c.cs, done, nil
}

// evictLocked removes the least recently used idle per-client session.
func (u *upstream) evictLocked() *clientConn {
	var victim *clientConn
	for _, c := range u.clients {
		if c.inflight > 0 {
			continue
		}
		select {
		case <-c.ready:
		default:
			continue // still connecting
		}
		if victim == nil || c.lastUsed.Before(victim.lastUsed) {
			victim = c
		}
	}
	if victim != nil {
		u.forgetLocked(victim)
	}
	return victim
}

func (u *upstream) forgetLocked(c *clientConn) {
	if u.clients[c.owner] == c {
		delete(u.clients, c.owner)
	}
	if c.cs != nil {
		delete(u.owners, c.cs)
	}
	if c.idle != nil {
		c.idle.Stop()
	}
}

func (u *upstream) releaseClient(c *clientConn) {
	u.mu.Lock()
	defer u.mu.Unlock()
	c.inflight--
	c.lastUsed = time.Now()
	if c.inflight == 0 && u.clients[c.owner] == c && u.cfg.IdleTimeout > 0 {
		if c.idle == nil {
			c.idle = time.AfterFunc(u.cfg.IdleTimeout, func() { u.reapClient(c) })
		} else {
			c.idle.Reset(u.cfg.IdleTimeout)
		}
	}
}

// reapClient closes a per-client session left idle for the idle timeout.
func (u *upstream) reapClient(c *clientConn) {
	u.mu.Lock()
	if c.inflight > 0 || u.clients[c.owner] != c || time.Since(c.lastUsed) < u.cfg.IdleTimeout {
		u.mu.Unlock()
		return
	}
	u.forgetLocked(c)
	u.mu.Unlock()
	u.log.Debug("per-client session idle; closed")
	u.closeClients([]*clientConn{c})
}

// connectClient opens a per-client session with a client that mirrors the
// downstream client's capabilities.
func (u *upstream) connectClient(c *clientConn) {
	defer u.wg.Done()
	ctx, cancel := context.WithTimeout(u.ctx, u.cfg.ConnectTimeout)
	defer cancel()
	client := u.newClient(clientCaps(c.owner))
	cs, err := u.dialClient(ctx, client)
	if err == nil {
		u.events.clientSessionStarted(ctx, u, c.owner, cs)
	}
	u.mu.Lock()
	c.client, c.cs, c.err = client, cs, err
	stale := u.clients[c.owner] != c || u.closed
	if err != nil {
		if u.clients[c.owner] == c {
			delete(u.clients, c.owner) // the next request tries again
		}
	} else if !stale {
		u.owners[cs] = c.owner
		u.wg.Add(1)
		go u.watchClient(c)
	}
	close(c.ready)
	u.mu.Unlock()
	if err != nil {
		u.log.Warn("per-client session failed to connect", u.withStderr("error", err)...)
		return
	}
	if stale { // evicted, ended or closed while connecting
		cs.Close()
		return
	}
	u.log.Debug("per-client session connected")
}

func (u *upstream) dialClient(ctx context.Context, client *mcp.Client) (*mcp.ClientSession, error) {
	cs, err := u.connectWith(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("connecting a per-client session: %w", err)
	}
	return cs, nil
}

// watchClient forgets a per-client session the server ended, so the next
// request from its client opens a new one.
func (u *upstream) watchClient(c *clientConn) {
	defer u.wg.Done()
	err := c.cs.Wait()
	u.mu.Lock()
	mine := u.clients[c.owner] == c
	if mine {
		u.forgetLocked(c)
	}
	u.mu.Unlock()
	if mine && !u.isClosed() {
		u.log.Warn("per-client session ended by the server", "error", err)
	}
}

func (u *upstream) isClosed() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.closed
}

// dropClient ends the per-client session of a downstream session that ended.
func (u *upstream) dropClient(ss *mcp.ServerSession) {
	u.mu.Lock()
	clients := u.takeClientsLocked(ss)
	u.mu.Unlock()
	u.closeClients(clients)
}

// takeClientsLocked removes ss's per-client session, or every one when ss is nil.
func (u *upstream) takeClientsLocked(ss *mcp.ServerSession) []*clientConn {
	var out []*clientConn
	for owner, c := range u.clients {
		if ss == nil || owner == ss {
			u.forgetLocked(c)
			out = append(out, c)
		}
	}
	return out
}

// closeClients closes sessions that were already forgotten; one still
// connecting is closed by connectClient when it sees it was forgotten.
func (u *upstream) closeClients(cs []*clientConn) {
	for _, c := range cs {
		select {
		case <-c.ready:
			if c.cs != nil {
				u.drainRaw(c.cs)
				c.cs.Close()
			}
		default:
		}
	}
}

// ownerOf returns the downstream session a per-client session serves, or
// nil for the shared session.
func (u *upstream) ownerOf(cs *mcp.ClientSession) *mcp.ServerSession {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.owners[cs]
}

// clientOf returns ss's per-client session and its client if connected.
func (u *upstream) clientOf(ss *mcp.ServerSession) (*mcp.Client, *mcp.ClientSession) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if c := u.clients[ss]; c != nil {
		select {
		case <-c.ready:
			return c.client, c.cs
		default:
		}
	}
	return nil, nil
}

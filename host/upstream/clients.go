package upstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/extensions"
)

// ErrTooManySessions is returned (wrapped) when a per_client server already
// has MaxSessions upstream sessions, all of them busy.
var ErrTooManySessions = errors.New("too many client sessions")

// clientConn is one per-client upstream session: its own connection (and,
// for stdio, its own process) serving one client. With sessions =
// "per_client" the client is an identity (every downstream session of one
// authenticated caller shares it) or, for a caller without one, a
// downstream session; with "per_session" always a downstream session. It
// ends when its last downstream session does, when idle for the server's
// idle timeout, or when evicted to make room for another client.
type clientConn struct {
	key      clientKey
	subject  string                                 // the identity's subject of the session that opened it, "" for none
	secrets  map[string]int64                       // the versions of the caller's secrets it was started with
	hide     []string                               // their values, taken out of its errors (MaskFor)
	owner    *mcp.ServerSession                     // the session that opened it, whose capabilities it mirrors
	owners   map[*mcp.ServerSession]bool            // every downstream session it serves; owner among them while it lasts
	last     *mcp.ServerSession                     // the one that sent a request last
	subs     map[string]map[*mcp.ServerSession]bool // resource URI -> owners subscribed through it
	subMu    sync.Mutex                             // one subscribe or unsubscribe upstream at a time, with its count
	ready    chan struct{}                          // closed once the connect attempt ended
	client   *mcp.Client                            // mirrors the owner's capabilities
	cs       *mcp.ClientSession
	err      error
	inflight int
	lastUsed time.Time
	logLevel mcp.LoggingLevel // the level set on cs (logging/setLevel), for 2026-07-28 requests' _meta
	idle     *time.Timer
}

// clientKey names the client a per-client session serves: an identity, or
// a downstream session.
type clientKey struct {
	identity string             // auth.Identity.Key(); "" for a session's own
	ss       *mcp.ServerSession // when identity is ""
}

// clientKeyOf returns the key of the per-client session that serves ss.
func (u *Server) clientKeyOf(ss *mcp.ServerSession) clientKey {
	if u.Config.Sessions == SessionsPerClient {
		if id := u.events.Identity(ss); id != nil {
			return clientKey{identity: id.Key()}
		}
	}
	return clientKey{ss: ss}
}

// clientCaps mirrors what the downstream client offers, so a per-client
// server sees the capabilities of the client it actually serves: the
// extensions among them that mcphost carries (host/extensions).
func clientCaps(ss *mcp.ServerSession) *mcp.ClientCapabilities {
	caps := &mcp.ClientCapabilities{}
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil {
		return caps
	}
	in := ip.Capabilities
	caps.Sampling = in.Sampling
	caps.Elicitation = in.Elicitation
	caps.Extensions = extensions.ForClient(in.Extensions)
	if in.RootsV2 != nil {
		caps.RootsV2 = in.RootsV2
	} else if in.Roots.ListChanged {
		caps.RootsV2 = &mcp.RootCapabilities{ListChanged: true}
	}
	return caps
}

// session returns the session to use for a request from ss: the shared one,
// or with sessions = "per_client" or "per_session" its client's own,
// connecting it on demand. The returned func marks the request done.
func (u *Server) SessionFor(ctx context.Context, ss *mcp.ServerSession) (*mcp.ClientSession, func(), error) {
	if u.PerUser() && (ss == nil || u.events.Identity(ss) == nil) {
		return nil, nil, u.errNoCaller() // never the gateway's grant
	}
	if u.exchanges() {
		if ss == nil {
			return nil, nil, u.errNoBearer() // never the gateway's token
		}
		latest := u.events.LatestIdentity(ss)
		if tok, _ := latest.Bearer(); tok == "" {
			return nil, nil, u.errNoBearer()
		}
		u.exchangeFor(u.events.Identity(ss).Key(), latest)
	}
	if !u.PerClient() || ss == nil {
		cs, err := u.session(ctx)
		return cs, func() {}, err
	}
	key := u.clientKeyOf(ss)
	var subject string
	if id := u.events.Identity(ss); id != nil {
		subject = id.Subject
	}
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil, nil, ErrClosed
	}
	if u.held {
		u.mu.Unlock()
		return nil, nil, u.heldError()
	}
	c := u.clients[key]
	var evicted *clientConn
	if !u.events.SessionLive(ss) {
		u.mu.Unlock()
		return nil, nil, errors.New("the client's session ended")
	}
	if c == nil {
		if len(u.clients) >= u.Config.MaxSessions {
			evicted = u.evictLocked()
			if evicted == nil {
				u.mu.Unlock()
				return nil, nil, fmt.Errorf("%w: server %q has %d per-client sessions, all busy (max_sessions)", ErrTooManySessions, u.Config.Name, u.Config.MaxSessions)
			}
		}
		c = &clientConn{key: key, subject: subject, owner: ss, owners: map[*mcp.ServerSession]bool{}, subs: map[string]map[*mcp.ServerSession]bool{}, ready: make(chan struct{})}
		u.clients[key] = c
		u.wg.Add(1)
		go u.connectClient(c)
	}
	c.owners[ss] = true
	c.last = ss
	c.inflight++
	c.lastUsed = time.Now()
	if c.idle != nil {
		c.idle.Stop()
	}
	u.mu.Unlock()
	if evicted != nil {
		u.log.Info("per-client session evicted to make room", "max_sessions", u.Config.MaxSessions)
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
func (u *Server) evictLocked() *clientConn {
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

func (u *Server) forgetLocked(c *clientConn) {
	if u.clients[c.key] == c {
		delete(u.clients, c.key)
	}
	if c.cs != nil {
		delete(u.owners, c.cs)
	}
	if c.idle != nil {
		c.idle.Stop()
	}
}

func (u *Server) releaseClient(c *clientConn) {
	u.mu.Lock()
	defer u.mu.Unlock()
	c.inflight--
	c.lastUsed = time.Now()
	if c.inflight == 0 && u.clients[c.key] == c && u.Config.IdleTimeout > 0 {
		if c.idle == nil {
			c.idle = time.AfterFunc(u.Config.IdleTimeout, func() { u.reapClient(c) })
		} else {
			c.idle.Reset(u.Config.IdleTimeout)
		}
	}
}

// reapClient closes a per-client session left idle for the idle timeout.
func (u *Server) reapClient(c *clientConn) {
	u.mu.Lock()
	if c.inflight > 0 || u.clients[c.key] != c || time.Since(c.lastUsed) < u.Config.IdleTimeout {
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
func (u *Server) connectClient(c *clientConn) {
	defer u.wg.Done()
	ctx, cancel := context.WithTimeout(u.ctx, u.Config.ConnectTimeout)
	defer cancel()
	client := u.newClient(clientCaps(c.owner))
	oauth := u.oauth
	var err error
	switch {
	case u.PerUser():
		oauth, err = u.UserFlow(grantSubject(u.events.Identity(c.owner)))
	case u.exchanges():
		oauth = u.exchangeFor(u.events.Identity(c.owner).Key(), nil)
	}
	spec := dialSpec{cfg: u.own, stdio: u.stdio}
	if err == nil && u.Config.Caller != nil {
		spec, err = u.callerSpec(ctx, c.owner)
	}
	var cs *mcp.ClientSession
	if err == nil {
		cs, err = u.dialClient(ctx, client, oauth, spec)
		err = hideValues(err, spec.hide) // a failed connection quotes the URL
	}
	u.mu.Lock()
	c.client, c.cs, c.err, c.secrets, c.hide = client, cs, err, spec.secrets, spec.hide
	stale := u.clients[c.key] != c || u.closed
	if err != nil {
		if u.clients[c.key] == c {
			delete(u.clients, c.key) // the next request tries again
		}
	} else if !stale {
		// Known as per-client before it is used: what the server sends
		// from now on goes to this client's sessions only.
		u.owners[cs] = c
		u.wg.Add(1)
		go u.watchClient(c)
	}
	u.mu.Unlock()
	if err == nil && !stale {
		u.events.ClientSessionStarted(ctx, u, c.owner, cs)
	}
	close(c.ready)
	var need *AuthorizationNeeded
	switch {
	case errors.As(err, &need):
		u.log.Debug("per-client session waits for its caller's login")
		return
	case errors.Is(err, ErrSecretNeeded):
		u.log.Debug("per-client session waits for its caller's secret")
		return
	case err != nil:
		u.log.Warn("per-client session failed to connect", u.withStderr("error", err)...)
		return
	}
	if stale { // evicted, ended or closed while connecting
		cs.Close()
		return
	}
	u.log.Debug("per-client session connected")
}

func (u *Server) dialClient(ctx context.Context, client *mcp.Client, oauth sdkauth.OAuthHandler, spec dialSpec) (*mcp.ClientSession, error) {
	cs, err := u.connectAs(ctx, client, oauth, spec)
	if err != nil {
		return nil, fmt.Errorf("connecting a per-client session: %w", err)
	}
	return cs, nil
}

// watchClient forgets a per-client session the server ended, so the next
// request from its client opens a new one.
func (u *Server) watchClient(c *clientConn) {
	defer u.wg.Done()
	err := c.cs.Wait()
	u.mu.Lock()
	mine := u.clients[c.key] == c
	if mine {
		u.forgetLocked(c)
	}
	u.mu.Unlock()
	if mine && !u.isClosed() {
		u.log.Warn("per-client session ended by the server", "error", hideValues(u.MaskMarked(err), c.hide))
	}
}

func (u *Server) isClosed() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.closed
}

// DropClient lets go of a downstream session that ended: the per-client
// session serving it ends when no other session of its client is left.
// When ss served one request of protocol 2026-07-28 (sessionless), an
// identity's per-client session stays for that identity's next request,
// until it is idle for the server's idle timeout or evicted: such a client
// has no session whose end would say it is done.
func (u *Server) DropClient(ss *mcp.ServerSession, sessionless bool) {
	u.mu.Lock()
	clients := u.takeClientsLocked(ss, sessionless)
	u.mu.Unlock()
	u.closeClients(clients)
}

// takeClientsLocked removes ss from the per-client sessions it used and
// takes those it was the last user of (but for an identity's, when ss was
// sessionless); every one when ss is nil.
func (u *Server) takeClientsLocked(ss *mcp.ServerSession, sessionless bool) []*clientConn {
	var out []*clientConn
	for _, c := range u.clients {
		if ss != nil {
			if !c.owners[ss] {
				continue
			}
			orphaned := c.leave(ss)
			if len(c.owners) > 0 || (sessionless && c.key.identity != "") {
				if len(orphaned) > 0 && c.cs != nil {
					u.wg.Add(1)
					go func(cs *mcp.ClientSession) {
						defer u.wg.Done()
						u.unsubscribeAll(cs, orphaned)
					}(c.cs)
				}
				continue
			}
		}
		u.forgetLocked(c)
		out = append(out, c)
	}
	return out
}

// leave takes ss out of c's owners and subscriptions, and returns the URIs
// no other owner is subscribed to. Under u.mu.
func (c *clientConn) leave(ss *mcp.ServerSession) (orphaned []string) {
	delete(c.owners, ss)
	for uri := range c.subs {
		if c.subs[uri][ss] && c.unsubscribe(ss, uri) {
			orphaned = append(orphaned, uri)
		}
	}
	if c.last == ss {
		c.last = nil
		for o := range c.owners {
			c.last = o
			break
		}
	}
	return orphaned
}

// unsubscribe takes ss's subscription to uri and reports whether it was
// the last one (or there was none). Under u.mu.
func (c *clientConn) unsubscribe(ss *mcp.ServerSession, uri string) bool {
	subs := c.subs[uri]
	if !subs[ss] {
		return len(subs) == 0
	}
	delete(subs, ss)
	if len(subs) > 0 {
		return false
	}
	delete(c.subs, uri)
	return true
}

// unsubscribeAll ends the subscriptions of a per-client session that no
// downstream session wants any more.
func (u *Server) unsubscribeAll(cs *mcp.ClientSession, uris []string) {
	for _, uri := range uris {
		ctx, cancel := context.WithTimeout(u.ctx, u.Config.Timeout)
		if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
			u.log.Debug("unsubscribing a per-client session failed", "uri", uri, "error", u.MaskMarked(err))
		}
		cancel()
	}
}

// closeClients closes sessions that were already forgotten; one still
// connecting is closed by connectClient when it sees it was forgotten.
func (u *Server) closeClients(cs []*clientConn) {
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

// CloseCallerSessions ends the per-client sessions of the callers of
// subject (an identity's, whichever way it authenticated) that were
// started with other versions of their secrets than current (0: the
// secret is gone), so that their next request starts them with the
// current ones. A session still connecting is ended too. It returns how
// many it ended.
func (u *Server) CloseCallerSessions(subject string, current map[string]int64) int {
	u.mu.Lock()
	var gone []*clientConn
	for _, c := range u.clients {
		if c.subject == subject && c.startedWithout(current) {
			u.forgetLocked(c)
			gone = append(gone, c)
		}
	}
	u.mu.Unlock()
	// One still connecting is closed by connectClient, as stale.
	u.closeClients(gone)
	return len(gone)
}

// MaskFor is MaskMarked, with the values of the caller's secrets that
// ss's own session was started with taken out too: the errors of its
// requests may quote its URL, which may hold one.
func (u *Server) MaskFor(ss *mcp.ServerSession, err error) error {
	err = u.MaskMarked(err)
	if err == nil || ss == nil || u.Config.Caller == nil || len(u.Config.Caller.Secrets()) == 0 || !u.PerClient() {
		return err
	}
	key := u.clientKeyOf(ss)
	u.mu.Lock()
	var hide []string
	if c := u.clients[key]; c != nil {
		hide = c.hide
	}
	u.mu.Unlock()
	return hideValues(err, hide)
}

// hideValues returns err with values taken out of its text (redactValues);
// err itself when it holds none.
func hideValues(err error, values []string) error {
	if err == nil || len(values) == 0 {
		return err
	}
	if text := redactValues(err.Error(), values); text != err.Error() {
		return &markedError{err: err, text: text}
	}
	return err
}

// startedWithout reports whether c is connecting, or was started with
// another version of one of the secrets of current; under u.mu.
func (c *clientConn) startedWithout(current map[string]int64) bool {
	select {
	case <-c.ready:
	default:
		return true
	}
	for name, v := range current {
		if got, ok := c.secrets[name]; ok && got != v {
			return true
		}
	}
	return false
}

// OwnerOf returns the downstream session a per-client session serves (the
// one that sent a request last, when several share it), or nil for the
// shared session.
func (u *Server) OwnerOf(cs *mcp.ClientSession) *mcp.ServerSession {
	u.mu.Lock()
	defer u.mu.Unlock()
	if c := u.owners[cs]; c != nil {
		return c.last
	}
	return nil
}

// OwnersOf returns every downstream session a per-client session serves;
// nil for the shared session.
func (u *Server) OwnersOf(cs *mcp.ClientSession) []*mcp.ServerSession {
	u.mu.Lock()
	defer u.mu.Unlock()
	c := u.owners[cs]
	if c == nil {
		return nil
	}
	out := make([]*mcp.ServerSession, 0, len(c.owners))
	for o := range c.owners {
		out = append(out, o)
	}
	return out
}

// subscribed records ss's subscription to uri on c and reports whether it
// is the first there (add), or takes it back and reports whether it was
// the last (!add).
func (u *Server) subscribed(c *clientConn, ss *mcp.ServerSession, uri string, add bool) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	subs := c.subs[uri]
	if add {
		if subs == nil {
			subs = map[*mcp.ServerSession]bool{}
			c.subs[uri] = subs
		}
		subs[ss] = true
		return len(subs) == 1
	}
	return c.unsubscribe(ss, uri)
}

// IsPerClientSession reports whether cs is not the shared session of a
// server that keeps per-client ones: what it sends is never for everyone,
// even while it is being set up or closed and has no owner.
func (u *Server) IsPerClientSession(cs *mcp.ClientSession) bool {
	if !u.PerClient() {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return cs != u.sess
}

// SubscribeOn runs op (an upstream Subscribe or Unsubscribe of uri on cs)
// when ss's subscription is the first (add) or the last (!add) of its
// per-client session, rolling the count back if op fails. Serialised per
// session, so a second subscriber waits for the first's answer instead of
// taking a failed subscription for a live one.
func (u *Server) SubscribeOn(cs *mcp.ClientSession, ss *mcp.ServerSession, uri string, add bool, op func() error) error {
	u.mu.Lock()
	c := u.owners[cs]
	u.mu.Unlock()
	if c == nil {
		return op() // not a per-client session any more: nothing to count
	}
	c.subMu.Lock()
	defer c.subMu.Unlock()
	u.mu.Lock()
	was := c.subs[uri][ss]
	u.mu.Unlock()
	switch {
	case add && was:
		return nil // already subscribed
	case !add && !was:
		return op() // not counted here: forwarded as it is
	}
	if !u.subscribed(c, ss, uri, add) {
		return nil
	}
	err := op()
	if err != nil {
		u.subscribed(c, ss, uri, !add)
	}
	return err
}

// PerClient reports whether the server keeps upstream sessions per client.
func (u *Server) PerClient() bool {
	return u.Config.Sessions == SessionsPerClient || u.Config.Sessions == SessionsPerSession
}

// ClientOf returns the per-client session serving ss and its client, if
// connected.
func (u *Server) ClientOf(ss *mcp.ServerSession) (*mcp.Client, *mcp.ClientSession) {
	key := u.clientKeyOf(ss)
	u.mu.Lock()
	defer u.mu.Unlock()
	if c := u.clients[key]; c != nil {
		select {
		case <-c.ready:
			return c.client, c.cs
		default:
		}
	}
	return nil, nil
}

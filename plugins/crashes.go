package plugins

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcphost-project/mcphost/abi"
)

// maxCrashCallers bounds the callers whose crashes one plugin remembers.
// Past it, the caller whose last crash is oldest (one out of its backoff
// first) is forgotten.
const maxCrashCallers = 1024

// callerCrashes is one caller's crash-loop state on one plugin: the
// policy of CrashLimit, CrashBackoff and MaxCrashBackoff, applied to that
// caller's calls only.
type callerCrashes struct {
	n     int           // consecutive crashes of the caller's calls
	until time.Time     // the caller's calls fail fast until then
	wait  time.Duration // the backoff last applied
	last  time.Time     // the last crash
}

// CallerKey names the caller whose tool calls share a crash-loop backoff
// (see Plugin.InvokeTool): its authenticated subject, else its session,
// else "" for a call without either.
func CallerKey(c abi.Caller) string {
	switch {
	case c.Subject != "":
		return "subject:" + c.AuthMethod + ":" + c.Subject
	case c.Identity != "":
		return "subject:" + c.AuthMethod + ":" + c.Identity
	case c.SessionID != "":
		return "session:" + c.SessionID
	}
	return ""
}

// gateCallerLocked fails fast while the caller is in its own backoff.
// The message names no error: the last one may be another call's.
func (p *Plugin) gateCallerLocked(who string, now time.Time) error {
	c := p.callers[who]
	if c == nil || c.until.IsZero() || !now.Before(c.until) {
		return nil
	}
	return fmt.Errorf("%w: %s: this caller's calls until %s, after %d consecutive crashes of its own",
		ErrUnavailable, p.spec.Name, c.until.Format(time.RFC3339), c.n)
}

// callerCrashLocked counts a crash against the caller who made the call,
// and puts that caller, not the plugin, in a backoff after CrashLimit in
// a row.
func (p *Plugin) callerCrashLocked(who string, err error) {
	now := time.Now()
	c := p.callers[who]
	if c == nil {
		if p.callers == nil {
			p.callers = make(map[string]*callerCrashes)
		}
		if len(p.callers) >= maxCrashCallers {
			p.forgetCallerLocked(now)
		}
		c = &callerCrashes{}
		p.callers[who] = c
	}
	c.n++
	c.last = now
	if c.n < CrashLimit {
		return
	}
	if c.wait == 0 {
		c.wait = CrashBackoff
	} else {
		c.wait = min(2*c.wait, MaxCrashBackoff)
	}
	c.until = now.Add(c.wait)
	// The key is not logged: a session ID is a credential of sorts.
	p.log.Warn("one caller's calls keep crashing the plugin; failing that caller's calls fast",
		"crashes", c.n, "retry_in", c.wait, "authenticated", strings.HasPrefix(who, "subject:"), "error", err)
}

// callerOKLocked notes a call of the caller that did not crash: a success
// clears its state, a plugin error its count of consecutive crashes.
func (p *Plugin) callerOKLocked(who string, success bool) {
	if success {
		delete(p.callers, who)
	} else if c := p.callers[who]; c != nil {
		c.n = 0
	}
}

// forgetCallerLocked drops the caller whose last crash is oldest,
// preferring one out of its backoff.
func (p *Plugin) forgetCallerLocked(now time.Time) {
	var oldest string
	var oldestC *callerCrashes
	for k, c := range p.callers {
		backing := now.Before(c.until)
		switch {
		case oldestC == nil:
		case backing && !now.Before(oldestC.until):
			continue
		case !backing && now.Before(oldestC.until):
		case !c.last.Before(oldestC.last):
			continue
		}
		oldest, oldestC = k, c
	}
	delete(p.callers, oldest)
}

// backedOffLocked counts the callers in their own backoff.
func (p *Plugin) backedOffLocked(now time.Time) int {
	n := 0
	for _, c := range p.callers {
		if now.Before(c.until) {
			n++
		}
	}
	return n
}

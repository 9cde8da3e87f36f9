// Package usersecrets gives each caller's upstream session the caller's
// own secrets: the values a server's caller templates read as
// ${caller.secrets.NAME} (an API token of theirs for one upstream).
//
// The values are kept in the store, sealed with its key and bound to
// (subject, name) (host/store). A Keeper reads them when a caller's
// upstream session starts (upstream.Events.CallerSecrets). When the caller
// has not given one, the session fails with Needed, whose link opens the
// secret page (SecretPath) of the running mcphost: as for a per_user OAuth
// login (upstream.Logins.Serve), the person proves there, with the
// credential listen.auth knows them by, that they are the caller the link
// was issued to, and then enters the value. The gateway asks the caller to
// open the link with a URL-mode elicitation when their client takes those
// (Ask: the call then waits for the value and goes on), or answers with
// the link in an error result.
//
// Values appear nowhere but in the store (sealed) and the environment,
// arguments, headers or URL of the caller's own upstream session: not in
// errors, logs, status, metrics or the audit log.
package usersecrets

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// SecretPath is the secret page a Needed link opens (auth.SecretPath).
const SecretPath = auth.SecretPath

// LinkTimeout bounds how long a link stays good, as a login link does.
const LinkTimeout = upstream.LoginTimeout

// maxPending bounds the links waiting at once: past it the oldest goes.
const maxPending = 1024

// MaxValue is the longest value a secret may have, in bytes.
const MaxValue = 8 << 10

// Options configure a Keeper.
type Options struct {
	// Values returns subject's stored secrets of names; a name without
	// one is left out (the store's CallerSecretValues).
	Values func(ctx context.Context, subject string, names []string) (map[string]Value, error)
	// Set stores a secret a caller entered on the secret page, and
	// restarts what used the old value (the engine's SetCallerSecret).
	Set func(ctx context.Context, subject, name string, value []byte) error
	// Base is the running mcphost's URL for the person's browser, without
	// a path: the secret page is at Base()+SecretPath.
	Base   func() string
	Logger hclog.Logger
}

// Value is a stored secret's value and version (the store's revision
// that wrote it).
type Value struct {
	Value   []byte
	Version int64
}

// Keeper hands callers' secrets to their upstream sessions and keeps the
// links of the secrets they have not given yet.
type Keeper struct {
	opts Options
	log  hclog.Logger

	mu      sync.Mutex
	pending map[string]*request // by id
	byNeed  map[string]*request // by needKey
}

// request is one link: the secrets one caller is asked for.
type request struct {
	id      string
	subject string
	server  string
	names   []string
	expires time.Time
	done    chan struct{} // closed once given
	given   bool          // under Keeper.mu
}

// New returns a Keeper.
func New(opts Options) *Keeper {
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Keeper{opts: opts, log: log, pending: map[string]*request{}, byNeed: map[string]*request{}}
}

// Needed is the error of a caller's session that waits for secrets the
// caller has not given: it says where to give them. It wraps
// upstream.ErrSecretNeeded.
type Needed struct {
	Server  string
	Subject string
	Names   []string
	URL     string
	req     *request
}

func (e *Needed) Error() string {
	return fmt.Sprintf("server %q needs your own %s (%s): open %s, enter %s, then call again",
		e.Server, plural(len(e.Names), "secret", "secrets"), strings.Join(e.Names, ", "), e.URL, plural(len(e.Names), "it", "them"))
}

func (e *Needed) Unwrap() error { return upstream.ErrSecretNeeded }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// CallerSecrets returns id's secrets of names for server's session
// (upstream.Events.CallerSecrets); a *Needed when one is missing. A nil
// Keeper (a host without one) has none to give.
func (k *Keeper) CallerSecrets(ctx context.Context, server string, id *auth.Identity, names []string) (map[string]upstream.CallerSecret, error) {
	if k == nil {
		return nil, fmt.Errorf("usersecrets: server %q reads the caller's secrets (caller.secrets), and this mcphost keeps none: give it a store block with a key", server)
	}
	if id == nil {
		return nil, fmt.Errorf("usersecrets: server %q reads the caller's secrets, and this request has no caller", server)
	}
	vals, err := k.opts.Values(ctx, id.Subject, names)
	if err != nil {
		// The store's errors name the secret and the subject, never the value.
		return nil, fmt.Errorf("usersecrets: reading the secrets of %s for server %q: %w", id.String(), server, err)
	}
	out := make(map[string]upstream.CallerSecret, len(names))
	var missing []string
	for _, n := range names {
		v, ok := vals[n]
		if !ok {
			missing = append(missing, n)
			continue
		}
		out[n] = upstream.CallerSecret{Value: string(v.Value), Version: v.Version}
	}
	if len(missing) > 0 {
		req := k.request(server, id.Subject, missing)
		return nil, &Needed{Server: server, Subject: id.Subject, Names: missing, URL: k.link(req), req: req}
	}
	return out, nil
}

// request returns the link waiting for subject's names of server, made
// anew when there is none or it expired.
func (k *Keeper) request(server, subject string, names []string) *request {
	key := needKey(server, subject, names)
	now := time.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	k.expireLocked(now)
	if r := k.byNeed[key]; r != nil {
		return r
	}
	if len(k.pending) >= maxPending {
		k.dropOldestLocked()
	}
	r := &request{id: rand.Text(), subject: subject, server: server, names: slices.Clone(names), expires: now.Add(LinkTimeout), done: make(chan struct{})}
	k.pending[r.id] = r
	k.byNeed[key] = r
	return r
}

// needKey names what a request asks for: one link per server, caller and
// names at a time.
func needKey(server, subject string, names []string) string {
	return server + "\x00" + subject + "\x00" + strings.Join(names, "\x00")
}

func (r *request) needKey() string { return needKey(r.server, r.subject, r.names) }

func (k *Keeper) expireLocked(now time.Time) {
	for id, r := range k.pending {
		if now.After(r.expires) {
			k.forgetLocked(id, r)
		}
	}
}

func (k *Keeper) dropOldestLocked() {
	var oldest *request
	for _, r := range k.pending {
		if oldest == nil || r.expires.Before(oldest.expires) {
			oldest = r
		}
	}
	if oldest != nil {
		k.forgetLocked(oldest.id, oldest)
	}
}

func (k *Keeper) forgetLocked(id string, r *request) {
	delete(k.pending, id)
	if k.byNeed[r.needKey()] == r {
		delete(k.byNeed, r.needKey())
	}
}

// byID is the waiting request id names, nil if none.
func (k *Keeper) byID(id string) *request {
	k.mu.Lock()
	defer k.mu.Unlock()
	r := k.pending[id]
	if r == nil || time.Now().After(r.expires) {
		return nil
	}
	return r
}

// complete marks r given and wakes whoever waits for it.
func (k *Keeper) complete(r *request) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.forgetLocked(r.id, r)
	if !r.given {
		r.given = true
		close(r.done)
	}
}

// link is the secret page's URL for r.
func (k *Keeper) link(r *request) string {
	base := ""
	if k.opts.Base != nil {
		base = strings.TrimSuffix(k.opts.Base(), "/")
	}
	return base + SecretPath + "?" + url.Values{"request": {r.id}}.Encode()
}

// Restart ends subject's per-client sessions of the servers whose caller
// templates read one of the secrets of current (each one's version now, 0
// for one deleted) that were started with another version: their next
// request starts them with the current values. Other callers' sessions,
// and servers that read none of them, are left alone. It returns how many
// sessions it ended.
func Restart(servers []*upstream.Server, subject string, current map[string]int64, log hclog.Logger) int {
	n := 0
	for _, u := range servers {
		if u.Config.Caller == nil || !slices.ContainsFunc(u.Config.Caller.Secrets(), func(s string) bool { _, ok := current[s]; return ok }) {
			continue
		}
		if k := u.CloseCallerSessions(subject, current); k > 0 {
			log.Info("restarted a caller's upstream sessions: a secret of theirs changed", "server", u.Config.Name, "subject", subject, "sessions", k)
			n += k
		}
	}
	return n
}

// Changed is one caller's secrets that changed since the last look
// (Versions.Diff): each name's version now, 0 for one deleted.
type Changed struct {
	Subject  string
	Versions map[string]int64
}

// Versions are the stored secrets' versions, by subject and name: what a
// replica saw last, to tell which changed.
type Versions map[[2]string]int64

// Diff returns the callers whose secrets were set, changed or deleted
// between v and next, by subject, each with the names that did.
func (v Versions) Diff(next Versions) []Changed {
	by := map[string]map[string]int64{}
	note := func(k [2]string) {
		if by[k[0]] == nil {
			by[k[0]] = map[string]int64{}
		}
		by[k[0]][k[1]] = next[k]
	}
	for k, ver := range next {
		if v[k] != ver {
			note(k)
		}
	}
	for k := range v {
		if _, ok := next[k]; !ok {
			note(k)
		}
	}
	out := make([]Changed, 0, len(by))
	for _, s := range slices.Sorted(maps.Keys(by)) {
		out = append(out, Changed{Subject: s, Versions: by[s]})
	}
	return out
}

// CheckValue refuses what cannot be a secret's value: empty, longer than
// MaxValue, or holding a NUL, a line break or another control character
// but tab (it goes into environment variables and HTTP headers).
func CheckValue(v []byte) error {
	switch {
	case len(v) == 0:
		return errors.New("the value is empty")
	case len(v) > MaxValue:
		return fmt.Errorf("the value is longer than %d bytes", MaxValue)
	}
	for _, c := range v {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return errors.New("the value holds a control character (a line break, NUL or the like)")
		}
	}
	return nil
}

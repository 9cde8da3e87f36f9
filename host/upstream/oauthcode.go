package upstream

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/grants"
	"github.com/mcphost-project/mcphost/host/internal/wire"
)

// The authorization-code login of a server behind OAuth (mode "shared"):
// the go-sdk's AuthorizationCodeHandler does the protocol (discovery from
// the 401, PKCE, resource, iss, registration, step-up); mcphost decides
// when a login runs, where its link is shown, how the code comes back, and
// keeps the grant.
//
// A call never waits on a human: when a server needs a login, the flow
// starts one in the background, the server's status turns "authorizing"
// with the link, and calls fail at once with an error that gives it. The
// code comes back to GET /oauth/callback (or to `mcphost auth login`'s own
// listener); the grant is stored and the server connects.

// CallbackPath is where an authorization server sends the browser back;
// it needs no credential of listen.auth.
const CallbackPath = auth.CallbackPath

// LoginPath is the page a login link of a running mcphost opens
// (loginpage.go); it needs no credential of listen.auth either.
const LoginPath = auth.LoginPath

// LoginTimeout bounds how long a login link stays good.
const LoginTimeout = 10 * time.Minute

// oauthHTTPTimeout bounds each request to an authorization server.
const oauthHTTPTimeout = 30 * time.Second

// OAuthEnv is what upstream logins share: the grants store, the logins in
// progress, and the default redirect URL.
type OAuthEnv struct {
	Grants   grants.Store
	Logins   *Logins
	Redirect string // default redirect_url: this host's own callback
	// Announce, when set, is told of each login link (the CLI prints it and
	// opens a browser). It must not wait for the browser: the callback's
	// page shows once the code is exchanged, which is after it returns.
	Announce func(server, url string)
	// Wait makes a request that needs a login wait for it (Options.WaitLogins).
	Wait bool
	// Authn, when set, is the host's listen.auth: a caller's grant from
	// the issuer it trusts must name the caller's own subject.
	Authn func() *auth.Authenticator
}

// AuthorizationNeeded is the error of a call to a server waiting for a
// login: it says where to go.
type AuthorizationNeeded struct {
	Server string
	// Subject is the caller who must authorize (oauth mode per_user), ""
	// for the gateway's own login.
	Subject string
	URL     string // "" while the link is being made
}

func (e *AuthorizationNeeded) Error() string {
	if e.Subject != "" {
		if e.URL == "" {
			return fmt.Sprintf("server %q needs you to authorize mcphost with your own account; the login is starting: call again in a moment for its link", e.Server)
		}
		return fmt.Sprintf("server %q needs you to authorize mcphost with your own account: open %s, then call again", e.Server, e.URL)
	}
	// The gateway's own login picks the account every caller uses: its
	// link is for administrators (mcphost status, the console), never in
	// a caller's error.
	return sharedLoginNeeded(e.Server)
}

// sharedLoginNeeded is what a caller hears of a server waiting for the
// gateway's own login.
func sharedLoginNeeded(server string) string {
	return fmt.Sprintf("server %q needs an OAuth login, which only an operator can give: run mcphost auth login %s CONFIG, or, as an administrator, open the login link that `mcphost status` and the console show", server, server)
}

// interactiveKey marks the context of a login that may wait for a human.
type interactiveKey struct{}

// Interactive marks ctx as one whose OAuth logins wait for the browser
// (mcphost auth login); elsewhere they run in the background.
func Interactive(ctx context.Context) context.Context {
	return context.WithValue(ctx, interactiveKey{}, true)
}

func isInteractive(ctx context.Context) bool { v, _ := ctx.Value(interactiveKey{}).(bool); return v }

// Logins are the logins waiting for their callback, by state.
//
// The Logins a Host makes itself are bound (loginpage.go): each login's
// link is a page of mcphost's, where the person proves they are the
// identity the login is for (an administrator, for the gateway's own),
// and its callback completes only in the browser that did. Logins made
// elsewhere (`mcphost auth login`, a one-shot command serving its own
// callback) are not: their link is the authorization server's, shown to
// the operator who ran the command.
type Logins struct {
	mu      sync.Mutex
	pending map[string]*PendingLogin
	byID    map[string]*PendingLogin // bound logins, by pendingLogin.id
	Bound   bool
}

type PendingLogin struct {
	Server string
	// Subject is the grants.Grant.Subject the login is for: "" for the
	// gateway's own.
	Subject string
	AuthURL string // the authorization server's link
	link    string // the link shown: authURL, or for a bound login its page
	// id names the login in its page's link and its cookie (bound
	// logins); proof is the SHA-256 of the cookie's value once someone
	// proved they may complete it, under Logins.mu; cookiePath is the
	// cookie's path (the page's and the callback's directory).
	ID         string
	proof      []byte
	cookiePath string
	secure     bool // the cookie is for https only
	Expires    time.Time

	Done chan loginResult // the callback's code, to the flow
	// finished is closed once the flow has exchanged the code (or failed
	// to), with why in err: the callback's page says so only then, and a
	// call made as soon as the page shows finds the grant.
	finished chan struct{}
	once     sync.Once
	err      error
}

// Finish records how the login ended; the first call counts.
func (p *PendingLogin) Finish(err error) {
	p.once.Do(func() {
		p.err = err
		close(p.finished)
	})
}

type loginResult struct {
	Res *sdkauth.AuthorizationResult
	Err error
}

// Expect registers the login of subject whose authorization server's link
// is authURL and whose callback is redirect: from now on, the callback
// with its state completes it. Its link, p.link, is authURL, or for bound
// logins mcphost's page.
func (l *Logins) Expect(server, subject, authURL, redirect string) (*PendingLogin, string, error) {
	u, err := url.Parse(authURL)
	if err != nil {
		return nil, "", err
	}
	state := u.Query().Get("state")
	if state == "" {
		return nil, "", errors.New("the authorization URL carries no state")
	}
	p := &PendingLogin{Server: server, Subject: subject, AuthURL: authURL, link: authURL, Expires: time.Now().Add(LoginTimeout),
		Done: make(chan loginResult, 1), finished: make(chan struct{})}
	if l.Bound {
		// The link is mcphost's page, beside the callback.
		p.ID = rand.Text()
		if p.link, err = p.page(redirect); err != nil {
			return nil, "", err
		}
	}
	l.mu.Lock()
	if l.pending == nil {
		l.pending, l.byID = map[string]*PendingLogin{}, map[string]*PendingLogin{}
	}
	l.pending[state] = p
	if p.ID != "" {
		l.byID[p.ID] = p
	}
	l.mu.Unlock()
	return p, state, nil
}

// await waits for the callback of the login expect registered, until ctx
// ends; either way the login is no longer expected.
func (l *Logins) await(ctx context.Context, p *PendingLogin, state string) (*sdkauth.AuthorizationResult, error) {
	defer func() {
		l.mu.Lock()
		if l.pending[state] == p {
			delete(l.pending, state)
		}
		delete(l.byID, p.ID)
		l.mu.Unlock()
	}()
	select {
	case r := <-p.Done:
		return r.Res, r.Err
	case <-ctx.Done():
		return nil, fmt.Errorf("no answer from the login link: %w", ctx.Err())
	}
}

// ServeHTTP is the callback: it hands the code (or the authorization
// server's error) to the login its state names. An unknown state is
// refused: it is not a login this process started, or it expired. So is
// the callback of a bound login in a browser without its cookie: someone
// other than who proved they may complete it (loginpage.go); the login
// stays open for them.
func (l *Logins) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	l.mu.Lock()
	p := l.pending[state]
	bindingOK := p != nil && (p.ID == "" || p.hasProofLocked(r))
	if bindingOK {
		delete(l.pending, state)
		delete(l.byID, p.ID)
	}
	l.mu.Unlock()
	if p == nil || state == "" {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, page("Login refused", "This link does not belong to a login mcphost is waiting for (wrong or expired state). Start the login again."))
		return
	}
	if !bindingOK {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, page("Login refused", fmt.Sprintf("This browser did not open the login of %s for %s and prove who it is at mcphost first, so mcphost will not keep the account you signed in with. Open the login link mcphost gave you, in this browser, and follow it from there.", p.Server, p.grantee())))
		return
	}
	if p.ID != "" {
		clearProofCookie(w, p)
	}
	e, desc := q.Get("error"), q.Get("error_description")
	if e == "" && q.Get("code") == "" {
		// Neither a code nor an error: the page said "Authorized" for a
		// login whose code exchange could only fail.
		e = "invalid_request"
		desc = "the callback carries no code"
	}
	if e != "" {
		err := fmt.Errorf("the authorization server refused: %s", e)
		if desc != "" {
			err = fmt.Errorf("%w (%s)", err, desc)
		}
		p.Done <- loginResult{Err: err}
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, page("Login refused", fmt.Sprintf("The authorization server answered %s for %s, for %s. %s", e, p.Server, p.grantee(), desc)))
		return
	}
	p.Done <- loginResult{Res: &sdkauth.AuthorizationResult{Code: q.Get("code"), State: state, Iss: q.Get("iss")}}
	wait := time.NewTimer(oauthHTTPTimeout)
	defer wait.Stop()
	select {
	case <-p.finished:
	case <-wait.C:
	case <-r.Context().Done():
		return
	}
	if p.err != nil {
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, page("Login failed", fmt.Sprintf("mcphost could not complete the login for %s, for %s: %s. Start the login again.", p.Server, p.grantee(), wire.ErrorText(p.err))))
		return
	}
	io.WriteString(w, page("Authorized", fmt.Sprintf("mcphost is now authorized for %s, for %s. You can close this tab.", p.Server, p.grantee())))
}

func page(title, body string) string {
	return fmt.Sprintf("<!doctype html><title>mcphost: %s</title><h1>%s</h1><p>%s</p>\n", html.EscapeString(title), html.EscapeString(title), html.EscapeString(body))
}

// CodeFlow is one grant's authorization-code client, the gateway's or
// one caller's (per_user): an sdkauth.OAuthHandler.
type CodeFlow struct {
	server  string
	subject string // grants.Grant.Subject: "" for the gateway's own
	log     hclog.Logger
	env     *OAuthEnv
	h       *sdkauth.AuthorizationCodeHandler
	client  *http.Client // for the authorization server: discovery, registration, tokens

	redirect string // where the authorization server sends the browser back

	ctx    context.Context // ends with the upstream; bounds background logins
	cancel context.CancelFunc

	mu        sync.Mutex
	pending   *PendingLogin // the login whose link is out, until it ends
	ts        *savingSource // the current grant's tokens; nil before a login
	loginURL  string        // the link of the login waiting for its callback
	loginErr  error         // why the last login failed
	running   bool
	stepUp    bool          // the running login answers a 403 insufficient_scope
	published chan struct{} // closed when a running login has its link (or ended)
	ended     chan struct{} // closed when the running login ends
	// authorized is called once a background login got a grant: the
	// upstream connects.
	authorized func()
}

func newCodeFlow(server, subject string, o *UpstreamOAuth, env *OAuthEnv, log hclog.Logger) (*CodeFlow, error) {
	if env == nil || env.Logins == nil {
		return nil, errors.New("no login environment (host.Options.Grants)")
	}
	redirect := o.RedirectURL
	if redirect == "" {
		redirect = env.Redirect
	}
	if redirect == "" {
		return nil, errors.New("set oauth redirect_url: mcphost does not know its own address")
	}
	f := &CodeFlow{server: server, subject: subject, redirect: redirect, env: env, log: log, client: &http.Client{Timeout: oauthHTTPTimeout}}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	cfg := &sdkauth.AuthorizationCodeHandlerConfig{
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: f.fetch,
		RequestRefreshToken:      true,
		Client:                   f.client,
		AcceptUnadvertisedIss:    true,
		NewTokenSource:           f.newTokenSource,
	}
	clientID, clientSecret := o.ClientID, o.ClientSecret
	if clientID == "" && subject != "" {
		clientID, clientSecret = f.gatewayClient(o)
	}
	if clientID != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: clientID}
		if clientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: clientSecret}
		}
	} else {
		cfg.DynamicClientRegistrationConfig = &sdkauth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{redirect}, ClientName: "mcphost", TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		}}
	}
	if o.ClientMetadataURL != "" {
		// Tried first, with authorization servers that accept such documents.
		cfg.ClientIDMetadataDocumentConfig = &sdkauth.ClientIDMetadataDocumentConfig{URL: o.ClientMetadataURL}
	}
	scopes := slices.Clone(o.Scopes)
	cfg.ScopeFilter = func(discovered []string) []string { return f.scopesFor(scopes, discovered) }
	if env.Grants != nil {
		g, err := env.Grants.Get(f.ctx, server, subject)
		if err != nil {
			log.Warn("reading the stored OAuth grant failed; a login will be asked for", "error", err)
		}
		if g != nil {
			f.ts = f.source(f.ctx, g.Config(), g.Token(), false)
			cfg.InitialTokenSource = f.ts
		}
	}
	h, err := sdkauth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, err
	}
	f.h = h
	return f, nil
}

// gatewayClient is the client the gateway's own login registered
// dynamically, which a caller's login (per_user) uses too: one
// registration per server rather than one per caller. None when the
// gateway has no grant, or one whose client is a metadata document's URL
// (tried first anyway).
func (f *CodeFlow) gatewayClient(o *UpstreamOAuth) (id, secret string) {
	if f.env.Grants == nil {
		return "", ""
	}
	g, err := f.env.Grants.Get(f.ctx, f.server, "")
	if err != nil || g == nil || g.ClientID == "" || g.ClientID == o.ClientMetadataURL {
		return "", ""
	}
	return g.ClientID, g.ClientSecret
}

// scopesFor is the scopes a login asks for: the configured ones, else
// those the server advertises. A step-up asks for the scopes the server's
// 403 names besides: replacing them with the configured ones, as a login
// does, asked for the same grant again, whose token the server refused
// again, for ever. It asks for the current grant's too, which the go-sdk
// only adds for grants it made itself, not for one read from the store.
func (f *CodeFlow) scopesFor(configured, discovered []string) []string {
	f.mu.Lock()
	stepUp, ts := f.stepUp, f.ts
	f.mu.Unlock()
	if !stepUp {
		if len(configured) > 0 {
			return configured
		}
		return discovered
	}
	var out []string
	sets := [][]string{configured, nil, discovered}
	if ts != nil {
		sets[1] = ts.cfg.Scopes
	}
	for _, set := range sets {
		for _, s := range set {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// checkCodeFlow is what Validate asks of an authorization-code oauth block.
func checkCodeFlow(o *UpstreamOAuth) error {
	if o.RedirectURL != "" {
		u, err := url.Parse(o.RedirectURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("redirect_url %q is not an http(s) URL", o.RedirectURL)
		}
	}
	return nil
}

// TokenSource is the current grant's, or none: a request without a token
// gets the server's 401, which starts a login.
func (f *CodeFlow) TokenSource(context.Context) (oauth2.TokenSource, error) {
	// The source's lock is held through a refresh: it is not waited for
	// under f.mu, which status reads.
	f.mu.Lock()
	ts := f.ts
	f.mu.Unlock()
	if ts == nil || ts.isDead() {
		return nil, nil
	}
	return ts, nil
}

// Authorize answers a 401 or 403 of the server. Within a login that may
// wait (Interactive), the go-sdk runs the whole flow. Otherwise a refused
// token is refreshed once (single-flight); if the authorization server
// refuses that, or there is no grant, a login starts in the background and
// the request fails at once with its link. A refresh the authorization
// server did not answer fails the request and keeps the grant.
func (f *CodeFlow) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	if isInteractive(ctx) {
		f.mu.Lock()
		f.stepUp = resp.StatusCode == http.StatusForbidden
		f.mu.Unlock()
		err := f.h.Authorize(ctx, req, resp)
		f.finishPending(err)
		return err
	}
	defer resp.Body.Close()
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if resp.StatusCode == http.StatusForbidden && !insufficientScope(challenges) {
		return nil // not an authorization matter: the retry gets the 403 to the caller
	}
	if resp.StatusCode == http.StatusUnauthorized {
		err := f.refresh(req)
		if err == nil {
			return nil
		}
		if !errors.Is(err, errLoginNeeded) {
			// The authorization server did not answer: the grant may
			// well be good, and a login would not help. (A login was
			// started here, and the grant dropped, for any failure.)
			f.log.Warn("refreshing the OAuth token failed; the grant is kept", "error", err)
			return err
		}
	}
	done := f.startLogin(req, resp)
	if f.env.Wait {
		select {
		case <-done:
			f.mu.Lock()
			err := f.loginErr
			f.mu.Unlock()
			if err != nil {
				return err
			}
			return nil // the transport retries with the new grant
		case <-ctx.Done():
			return f.needed()
		}
	}
	select {
	case <-f.publishedCh():
	case <-time.After(5 * time.Second):
	case <-ctx.Done():
	}
	return f.needed()
}

func (f *CodeFlow) needed() *AuthorizationNeeded {
	return &AuthorizationNeeded{Server: f.server, Subject: f.subject, URL: f.pendingURL()}
}

// LoginEnded is closed when the running login ends (at once when none is:
// the last one's is closed).
func (f *CodeFlow) LoginEnded() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return orClosed(f.ended)
}

// closedChan is what a wait for something that never started gets.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// orClosed is c, or a closed channel when c is nil.
func orClosed(c chan struct{}) <-chan struct{} {
	if c == nil {
		return closedChan
	}
	return c
}

// HasGrant reports whether the flow holds a grant that may still work.
func (f *CodeFlow) HasGrant() bool {
	f.mu.Lock()
	ts := f.ts
	f.mu.Unlock()
	return ts != nil && !ts.isDead()
}

func insufficientScope(cs []oauthex.Challenge) bool {
	for _, c := range cs {
		if c.Params["error"] == "insufficient_scope" {
			return true
		}
	}
	return false
}

// errLoginNeeded marks a refresh that cannot succeed (no grant, no
// refresh token, or one the authorization server refused): only a login
// helps.
var errLoginNeeded = errors.New("a login is needed")

// refresh gets a new token with the refresh token, unless another request
// already did since req was sent with the old one.
func (f *CodeFlow) refresh(req *http.Request) error {
	f.mu.Lock()
	ts := f.ts
	f.mu.Unlock()
	if ts == nil {
		return fmt.Errorf("no grant: %w", errLoginNeeded)
	}
	return ts.refresh(req.Header.Get("Authorization"))
}

// tokenFailure is a failed token request (a refresh, unless what says
// otherwise), said as the authorization server's answer: oauth2's own
// wording ("cannot fetch token: ...") is what the masking of status and
// errors takes for a credential, and it hid why.
type tokenFailure struct {
	err  error
	what string // "" for "refresh"
}

func (e *tokenFailure) Error() string {
	what := e.what
	if what == "" {
		what = "refresh"
	}
	var re *oauth2.RetrieveError
	if !errors.As(e.err, &re) || re.Response == nil {
		return "the authorization server did not answer the " + what + ": " + e.err.Error()
	}
	msg := "the authorization server answered the " + what + " with " + re.Response.Status
	if re.ErrorCode != "" {
		msg += ", " + re.ErrorCode
	}
	if re.ErrorDescription != "" {
		msg += ": " + re.ErrorDescription
	}
	return msg
}

func (e *tokenFailure) Unwrap() error { return e.err }

// refused reports whether the authorization server refused a token
// request (an error response, RFC 6749 section 5.2) rather than failing
// to answer it (5xx, a timeout, too many requests), which may pass.
func refused(err error) bool {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return false
	}
	if re.Response != nil {
		c := re.Response.StatusCode
		return c >= 400 && c < 500 && c != http.StatusRequestTimeout && c != http.StatusTooManyRequests
	}
	return re.ErrorCode != ""
}

// startLogin runs a login in the background unless one is running; its
// link is in the status until the callback comes or it expires. The
// channel is closed when the login ends.
func (f *CodeFlow) startLogin(req *http.Request, resp *http.Response) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running || f.ctx.Err() != nil {
		return orClosed(f.ended)
	}
	f.running, f.loginErr = true, nil
	f.stepUp = resp.StatusCode == http.StatusForbidden
	f.published = make(chan struct{})
	f.ended = make(chan struct{})
	ended := f.ended
	// The response's body is gone by the time the login runs: only its
	// status and challenges matter to the flow.
	resp2 := &http.Response{StatusCode: resp.StatusCode, Header: resp.Header.Clone(), Body: http.NoBody, Request: req}
	req2 := req.Clone(context.Background())
	go func() {
		ctx, cancel := context.WithTimeout(Interactive(f.ctx), LoginTimeout)
		defer cancel()
		err := f.h.Authorize(ctx, req2, resp2)
		f.finishPending(err)
		f.mu.Lock()
		f.running, f.loginURL, f.loginErr = false, "", err
		select {
		case <-f.published:
		default:
			close(f.published)
		}
		done := f.authorized
		f.mu.Unlock()
		defer close(ended)
		if err != nil && f.ctx.Err() != nil {
			return // the upstream closed: not a failure to report
		}
		if err != nil {
			f.log.Warn("OAuth login failed; the next call starts another", "error", err)
			return
		}
		f.log.Info("OAuth login complete; connecting")
		if done != nil {
			done()
		}
	}()
	return ended
}

func (f *CodeFlow) publishedCh() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return orClosed(f.published)
}

// fetch is the go-sdk's AuthorizationCodeFetcher: it shows the link and
// waits for the callback.
func (f *CodeFlow) fetch(ctx context.Context, args *sdkauth.AuthorizationArgs) (*sdkauth.AuthorizationResult, error) {
	// The login is registered before its link is shown: a browser (or a
	// test) that follows the link at once came back before it was, and the
	// callback refused a login that then waited for nothing.
	p, state, err := f.env.Logins.Expect(f.server, f.subject, args.URL, f.redirect)
	if err != nil {
		return nil, err
	}
	link := p.link
	f.mu.Lock()
	f.loginURL, f.pending = link, p
	if f.published != nil {
		select {
		case <-f.published:
		default:
			close(f.published)
		}
	}
	f.mu.Unlock()
	if f.subject != "" {
		// The link is the caller's, shown to them in their call's result.
		f.log.Info("caller needs an OAuth login for the server", "subject", f.subject)
	} else {
		f.log.Info("server needs an OAuth login: open the link", "url", link)
	}
	if f.env.Announce != nil && f.subject == "" {
		f.env.Announce(f.server, link)
	}
	return f.env.Logins.await(ctx, p, state)
}

// finishPending tells the callback of the login that just ended how it
// ended.
func (f *CodeFlow) finishPending(err error) {
	f.mu.Lock()
	p := f.pending
	f.pending = nil
	f.mu.Unlock()
	if p != nil {
		p.Finish(err)
	}
}

// pendingURL is the link of the login waiting, "" for none.
func (f *CodeFlow) pendingURL() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.loginURL
}

// LastLoginError is why the last login failed, nil if it did not or if
// the grant still works: a refused step-up (or one nobody answered) leaves
// the grant as it was, and a server that went idle then is not
// unauthorized.
func (f *CodeFlow) LastLoginError() error {
	f.mu.Lock()
	err, ts := f.loginErr, f.ts
	f.mu.Unlock()
	if err == nil || (ts != nil && !ts.isDead()) {
		return nil
	}
	return err
}

func (f *CodeFlow) close() { f.cancel() }

// newTokenSource is the go-sdk's hook after a code exchange: the grant is
// stored, and so is every token that replaces it.
func (f *CodeFlow) newTokenSource(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
	if err := f.sameSubject(tok); err != nil {
		return nil, err
	}
	ts := f.source(ctx, cfg, tok, true)
	f.mu.Lock()
	f.ts = ts
	f.mu.Unlock()
	return ts, nil
}

// source is a token source for cfg's client starting at tok that stores
// each new token; save stores tok itself now.
func (f *CodeFlow) source(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token, save bool) *savingSource {
	// Refreshes go through the flow's client, which has a timeout: one
	// runs under the source's lock, which every request of the upstream
	// waits for (the go-sdk asks for the token holding its own), so an
	// authorization server that never answered hung the upstream.
	ctx = context.WithValue(ctx, oauth2.HTTPClient, f.client)
	s := &savingSource{ctx: ctx, cfg: cfg, base: cfg.TokenSource(ctx, tok), last: tok.AccessToken, rt: tok.RefreshToken, save: func(t *oauth2.Token) {
		if f.env.Grants == nil {
			return
		}
		if err := f.env.Grants.Put(context.WithoutCancel(ctx), grants.New(f.server, f.subject, cfg, t)); err != nil {
			f.log.Warn("storing the OAuth grant failed; it lasts until mcphost stops", "error", err)
		}
	}, load: func() *oauth2.Token {
		if f.env.Grants == nil {
			return nil
		}
		g, err := f.env.Grants.Get(context.WithoutCancel(ctx), f.server, f.subject)
		if err != nil || g == nil || g.ClientID != cfg.ClientID {
			return nil
		}
		return g.Token()
	}}
	if save {
		s.save(tok)
	}
	return s
}

// savingSource refreshes before expiry (oauth2's reuse source) and on
// demand, one refresh at a time, and stores each new token.
type savingSource struct {
	ctx  context.Context
	cfg  *oauth2.Config
	save func(*oauth2.Token)
	// load reads the grant as stored, which another process sharing the
	// store (a replica, `mcphost auth login`) may have renewed: with
	// rotating refresh tokens, its refresh made ours useless.
	load func() *oauth2.Token

	mu   sync.Mutex
	base oauth2.TokenSource
	last string // the access token last handed out
	rt   string // its refresh token
	dead bool   // the authorization server refused to refresh: a login is needed
}

func (s *savingSource) isDead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dead
}

// Token is the current access token, refreshed first when it expired.
// When only a login can help it returns no token and no error: the go-sdk
// then sends the request without one, and the server's 401 starts the
// login. (An error failed the request before it was sent, so a grant with
// no refresh token whose access token expired failed every request, with
// no 401 to start a login, for ever.)
func (s *savingSource) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return nil, nil
	}
	t, err := s.base.Token()
	if err != nil {
		// With no refresh token, the error is that the token expired.
		if s.rt != "" && !refused(err) {
			return nil, err // the authorization server did not answer: the next request tries again
		}
		if t := s.adoptStoredLocked(); t != nil {
			return t, nil
		}
		s.dead = true
		return nil, nil
	}
	if t.AccessToken != s.last {
		s.last = t.AccessToken
		s.save(t)
	}
	if t.RefreshToken != "" {
		s.rt = t.RefreshToken
	}
	return t, nil
}

// adoptStoredLocked takes the stored grant's token when it is another,
// still valid one than ours, and returns it; nil otherwise.
func (s *savingSource) adoptStoredLocked() *oauth2.Token {
	if s.load == nil {
		return nil
	}
	t := s.load()
	if t == nil || t.AccessToken == s.last || !t.Valid() {
		return nil
	}
	s.base, s.last, s.dead = s.cfg.TokenSource(s.ctx, t), t.AccessToken, false
	if t.RefreshToken != "" {
		s.rt = t.RefreshToken
	}
	return t
}

// refresh replaces a token the server refused, unless sentWith (the
// Authorization header the refused request carried) is already old news.
// Its error wraps errLoginNeeded when only a login can help.
func (s *savingSource) refresh(sentWith string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last != "" && sentWith != "" && sentWith != "Bearer "+s.last {
		return nil // another request refreshed meanwhile
	}
	// Renewed elsewhere meanwhile (a replica sharing the store).
	if s.adoptStoredLocked() != nil {
		return nil
	}
	// A refresh token refused once is not sent again with every request
	// that follows.
	if s.dead {
		return fmt.Errorf("the grant was refused: %w", errLoginNeeded)
	}
	if s.rt == "" {
		s.dead = true
		return fmt.Errorf("no refresh token: %w", errLoginNeeded)
	}
	next := s.cfg.TokenSource(s.ctx, &oauth2.Token{RefreshToken: s.rt})
	t, err := next.Token()
	if err != nil {
		if refused(err) {
			s.dead = true
			return fmt.Errorf("%w: %w", &tokenFailure{err: err}, errLoginNeeded)
		}
		return &tokenFailure{err: err}
	}
	s.base, s.last, s.dead = next, t.AccessToken, false
	if t.RefreshToken != "" {
		s.rt = t.RefreshToken
	}
	s.save(t)
	return nil
}

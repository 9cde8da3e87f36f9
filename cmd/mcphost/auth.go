package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/grants"
	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/store"
	"github.com/mcphost-project/mcphost/host/upstream"
)

const authUsage = `usage:
  mcphost auth login SERVER CONFIG [--no-browser] [--timeout 10m]
  mcphost auth status CONFIG [--json]
  mcphost auth logout SERVER CONFIG [--subject METHOD:SUBJECT]

OAuth logins to upstream servers whose oauth block has no grant. login
is the gateway's own login: the grant of mode "shared", and with mode
"per_user" the one that lists the server's tools (each caller logs in for
themself from the link their first call gives). login prints the authorization link (and opens $BROWSER, or
xdg-open), serves the callback at the server's redirect_url (by default
mcphost's own http://127.0.0.1:7700/oauth/callback: stop a running mcphost
first, or open the link "mcphost status" shows instead), and keeps the
grant in the config's grants file, where a running mcphost finds it.
status lists the gateway's grants and every caller's; logout --subject
removes one caller's (as status names it, e.g. key:alice).`

// runAuth is `mcphost auth login|status|logout`.
func runAuth(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, authUsage)
		return exitError(2)
	}
	sub := args[0]
	if isHelp(sub) {
		fmt.Fprintln(stdout, authUsage)
		return nil
	}
	fs := newFlagSet("auth "+sub, authUsage, stdout, stderr)
	noBrowser := fs.Bool("no-browser", false, "print the link only (login)")
	timeout := fs.Duration("timeout", 10*time.Minute, "how long to wait for the browser (login)")
	asJSON := fs.Bool("json", false, "print JSON (status)")
	subject := fs.String("subject", "", "the caller whose grant to remove, as status names it (logout, per_user)")
	pos, err := fs.parse(args[1:])
	if err != nil {
		return err
	}
	want := map[string]int{"login": 2, "logout": 2, "status": 1}[sub]
	if want == 0 || len(pos) != want {
		return fs.misuse()
	}
	file, err := loadConfig(pos[len(pos)-1], stderr)
	if err != nil {
		return err
	}
	if file.Grants == nil {
		fmt.Fprintln(stderr, "mcphost auth: no server of this config logs in (an oauth block without grant), and it has no grants block")
		return exitError(1)
	}
	kept, err := openGrants(ctx, file)
	if err != nil {
		fmt.Fprintln(stderr, "mcphost auth:", err)
		return exitError(1)
	}
	defer kept.Close()
	switch sub {
	case "status":
		return authStatus(ctx, file, kept, *asJSON, stdout)
	case "logout":
		if _, err := loginServer(file, pos[0]); err != nil {
			fmt.Fprintln(stderr, "mcphost auth:", err)
			return exitError(1)
		}
		g, err := kept.Get(ctx, pos[0], *subject)
		if err != nil {
			return err
		}
		if g == nil {
			fmt.Fprintf(stderr, "mcphost auth: no grant of %s for %s in %s (mcphost auth status lists them)\n", pos[0], whose(*subject), kept.Path())
			return exitError(1)
		}
		if err := kept.Delete(ctx, pos[0], *subject); err != nil {
			return err
		}
		if *subject != "" {
			fmt.Fprintf(stdout, "logged %s out of %s (grant removed from %s); a running mcphost forgets the token it holds when it restarts or the server refuses it, and then gives them a login link\n", *subject, pos[0], kept.Path())
			return nil
		}
		fmt.Fprintf(stdout, "logged out of %s (grant removed from %s); a running mcphost asks for a login at its next connect\n", pos[0], kept.Path())
		return nil
	}
	sc, err := loginServer(file, pos[0])
	if err != nil {
		fmt.Fprintln(stderr, "mcphost auth:", err)
		return exitError(1)
	}
	cb := &callbacks{logins: &upstream.Logins{}}
	defer cb.close()
	redirect := sc.OAuth.RedirectURL
	if redirect == "" {
		redirect = listener.DefaultRedirect(file.Host.Listen)
	}
	// Listen before anything asks the browser to come back.
	if err := cb.serve(redirect); err != nil {
		fmt.Fprintln(stderr, "mcphost auth:", err)
		return exitError(1)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	n, err := upstream.Login(ctx, sc, upstream.LoginOptions{Grants: kept, Logins: cb.logins, Redirect: redirect,
		Announce: announcer(stderr, !*noBrowser)})
	if err != nil {
		fmt.Fprintf(stderr, "mcphost auth: login to %s failed: %s\n", sc.Name, oneLine(err.Error()))
		return exitError(1)
	}
	fmt.Fprintf(stdout, "authorized %s: %s; the grant is kept in %s\n", sc.Name, plural(n, "tool"), kept.Path())
	return nil
}

// loginServer is the server of file named name, if it logs in.
func loginServer(file *config.File, name string) (upstream.ServerConfig, error) {
	for _, sc := range file.Host.Servers {
		if sc.Name != name {
			continue
		}
		if sc.OAuth == nil || sc.OAuth.Grant != "" {
			return upstream.ServerConfig{}, fmt.Errorf("server %q does not log in: give it an oauth block without grant", name)
		}
		return sc, nil
	}
	return upstream.ServerConfig{}, fmt.Errorf("no server %q in the config", name)
}

// grantsWhere is the config's grants store and where it is, for messages.
type grantsWhere struct {
	grants.Store
	where string
	close func() error
}

func (g grantsWhere) Path() string { return g.where }
func (g grantsWhere) Close() error { return g.close() }

// openGrants opens where the config keeps its grants: the grants file, or
// the store (with a key, and no grants block).
func openGrants(ctx context.Context, file *config.File) (grantsWhere, error) {
	if !file.Grants.Store {
		f, err := grants.NewFile(file.Grants.File, file.Grants.Key)
		if err != nil {
			return grantsWhere{}, err
		}
		return grantsWhere{Store: f, where: f.Path(), close: func() error { return nil }}, nil
	}
	st := file.Store
	db, err := store.Open(ctx, store.Options{Driver: st.Driver, DSN: st.DSN, Key: st.Key})
	if err != nil {
		return grantsWhere{}, err
	}
	g, err := db.Grants()
	if err != nil {
		db.Close()
		return grantsWhere{}, err
	}
	return grantsWhere{Store: g, where: "the store (" + store.Describe(st.Driver, st.DSN) + ")", close: db.Close}, nil
}

func authStatus(ctx context.Context, file *config.File, kept grantsWhere, asJSON bool, stdout io.Writer) error {
	list, err := kept.List(ctx)
	if err != nil {
		return err
	}
	type row struct {
		Server     string    `json:"server"`
		Subject    string    `json:"subject,omitempty"` // a caller's grant (per_user); none for the gateway's
		Authorized bool      `json:"authorized"`
		Expiry     time.Time `json:"expiry,omitzero"`
		Refresh    bool      `json:"refreshable"`
		Scopes     []string  `json:"scopes,omitempty"`
		Updated    time.Time `json:"updated,omitzero"`
	}
	var rows []row
	for _, sc := range file.Host.Servers {
		if sc.OAuth == nil || sc.OAuth.Grant != "" {
			continue
		}
		r := row{Server: sc.Name}
		var users []row
		for _, g := range list {
			if g.Server != sc.Name {
				continue
			}
			gr := row{Server: sc.Name, Subject: g.Subject, Authorized: true, Expiry: g.Expiry, Refresh: g.RefreshToken != "", Scopes: g.Scopes, Updated: g.Updated}
			if g.Subject == "" {
				r = gr
			} else if sc.OAuth.Mode == upstream.OAuthPerUser {
				users = append(users, gr)
			}
		}
		slices.SortFunc(users, func(a, b row) int { return strings.Compare(a.Subject, b.Subject) })
		rows = append(append(rows, r), users...)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"file": kept.Path(), "servers": rows})
	}
	fmt.Fprintf(stdout, "grants in %s\n", kept.Path())
	for _, r := range rows {
		if r.Subject != "" {
			fmt.Fprintf(stdout, "    for %-16s %s\n", r.Subject, grantLine(r.Expiry, r.Refresh, r.Scopes))
			continue
		}
		if !r.Authorized {
			fmt.Fprintf(stdout, "  %-20s not authorized: mcphost auth login %s CONFIG\n", r.Server, r.Server)
			continue
		}
		fmt.Fprintf(stdout, "  %-20s authorized: %s\n", r.Server, grantLine(r.Expiry, r.Refresh, r.Scopes))
	}
	return nil
}

// grantLine describes a grant's token for auth status.
func grantLine(expiry time.Time, refreshable bool, scopes []string) string {
	exp := "no expiry"
	if !expiry.IsZero() {
		exp = "token expires " + expiry.Local().Format(time.RFC3339)
	}
	refresh := "no refresh token"
	if refreshable {
		refresh = "refreshable"
	}
	return fmt.Sprintf("%s, %s, scopes %q", exp, refresh, scopes)
}

// whose names the owner of a grant for messages.
func whose(subject string) string {
	if subject == "" {
		return "the gateway"
	}
	return subject
}

// announcer prints a login link and opens a browser on it.
func announcer(w io.Writer, browser bool) func(server, link string) {
	return func(server, link string) {
		fmt.Fprintf(w, "Open this link to authorize mcphost for %s:\n  %s\n", server, link)
		if browser {
			openBrowser(link)
		}
	}
}

// openBrowser starts $BROWSER, or xdg-open, on link without waiting; no
// browser is no error (the link is printed).
func openBrowser(link string) {
	prog := os.Getenv("BROWSER")
	if prog == "" {
		if p, err := exec.LookPath("xdg-open"); err == nil {
			prog = p
		}
	}
	if prog == "" {
		return
	}
	cmd := exec.Command(prog, link)
	if err := cmd.Start(); err == nil {
		go cmd.Wait()
	}
}

// callbacks serves the OAuth callback of a command that has no HTTP
// listener of its own, on each redirect URL's address.
type callbacks struct {
	logins *upstream.Logins
	mu     sync.Mutex
	srvs   map[string]*http.Server
}

// serve listens on redirect's host and port (once per address).
func (c *callbacks) serve(redirect string) error {
	u, err := url.Parse(redirect)
	if err != nil || u.Host == "" {
		return fmt.Errorf("redirect_url %q is not a URL", redirect)
	}
	addr := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(u.Hostname(), port)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.srvs[addr] != nil {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		var opErr *net.OpError
		if errors.As(err, &opErr) {
			return fmt.Errorf("cannot serve the OAuth callback on %s (%v): is mcphost running there? Then open the link `mcphost status` shows, or stop it and log in again", addr, opErr.Err)
		}
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+u.Path, c.logins)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	if c.srvs == nil {
		c.srvs = map[string]*http.Server{}
	}
	c.srvs[addr] = srv
	return nil
}

func (c *callbacks) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.srvs {
		s.Close()
	}
}

// redirectOf is the redirect_uri an authorization link sends the browser
// back to.
func redirectOf(link string) string {
	u, err := url.Parse(link)
	if err != nil {
		return ""
	}
	return u.Query().Get("redirect_uri")
}

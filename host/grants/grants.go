// Package grants keeps the OAuth grants mcphost holds for upstream
// servers: the tokens and the client they were issued to, so that a
// restart does not send every user back through a login. One interface;
// a file by default (0600, written atomically, sealed when given a key),
// and the run-time store (host/store) can keep them too.
package grants

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcphost-project/mcphost/internal/seal"
)

// Grant is one authorization: the token, and what refreshing it needs.
type Grant struct {
	Server string `json:"server"`
	// Subject is the identity the grant belongs to (per_user), "" for the
	// gateway's own (shared).
	Subject string `json:"subject,omitempty"`

	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`

	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret,omitempty"`
	AuthURL      string   `json:"auth_url"`
	TokenURL     string   `json:"token_url"`
	AuthStyle    int      `json:"auth_style,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`

	Updated time.Time `json:"updated"`
}

// Token is the grant's token for golang.org/x/oauth2.
func (g *Grant) Token() *oauth2.Token {
	return &oauth2.Token{AccessToken: g.AccessToken, TokenType: g.TokenType, RefreshToken: g.RefreshToken, Expiry: g.Expiry}
}

// Config is the client the grant was issued to.
func (g *Grant) Config() *oauth2.Config {
	return &oauth2.Config{ClientID: g.ClientID, ClientSecret: g.ClientSecret, Scopes: g.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: g.AuthURL, TokenURL: g.TokenURL, AuthStyle: oauth2.AuthStyle(g.AuthStyle)}}
}

// New is the grant of token issued to cfg's client.
func New(server, subject string, cfg *oauth2.Config, tok *oauth2.Token) *Grant {
	return &Grant{Server: server, Subject: subject,
		AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry,
		ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, AuthURL: cfg.Endpoint.AuthURL, TokenURL: cfg.Endpoint.TokenURL,
		AuthStyle: int(cfg.Endpoint.AuthStyle), Scopes: slices.Clone(cfg.Scopes), Updated: time.Now().UTC()}
}

// Store keeps grants by (server, subject). Get returns nil, nil when there
// is none.
type Store interface {
	Get(ctx context.Context, server, subject string) (*Grant, error)
	Put(ctx context.Context, g *Grant) error
	Delete(ctx context.Context, server, subject string) error
	List(ctx context.Context) ([]Grant, error)
}

// File is a Store in one JSON file. Every operation reads the file again,
// so `mcphost auth login` and a running mcphost share it.
type File struct {
	path string
	seal *seal.Sealer // nil: tokens in the clear (the file is 0600)
	mu   sync.Mutex
}

// fileDoc is the file's content: grants, or the sealed grants.
type fileDoc struct {
	Version int     `json:"version"`
	Grants  []Grant `json:"grants,omitempty"`
	Sealed  string  `json:"sealed,omitempty"`
}

// NewFile returns the store in path; key, when not nil (32 bytes), seals
// the grants with AES-256-GCM.
func NewFile(path string, key []byte) (*File, error) {
	s, err := seal.New(key)
	if err != nil {
		return nil, fmt.Errorf("grants: %w", err)
	}
	return &File{path: path, seal: s}, nil
}

// Path is where the grants are kept.
func (f *File) Path() string { return f.path }

func (f *File) Get(_ context.Context, server, subject string) (*Grant, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	all, err := f.read()
	if err != nil {
		return nil, err
	}
	for _, g := range all {
		if g.Server == server && g.Subject == subject {
			return &g, nil
		}
	}
	return nil, nil
}

func (f *File) Put(_ context.Context, g *Grant) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	all, err := f.read()
	if err != nil {
		return err
	}
	all = slices.DeleteFunc(all, func(x Grant) bool { return x.Server == g.Server && x.Subject == g.Subject })
	return f.write(append(all, *g))
}

func (f *File) Delete(_ context.Context, server, subject string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	all, err := f.read()
	if err != nil {
		return err
	}
	n := len(all)
	all = slices.DeleteFunc(all, func(x Grant) bool { return x.Server == server && x.Subject == subject })
	if len(all) == n {
		return nil
	}
	return f.write(all)
}

func (f *File) List(context.Context) ([]Grant, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.read()
}

func (f *File) read() ([]Grant, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("grants: %w", err)
	}
	gs, err := decode(b, f.seal)
	if err != nil {
		return nil, fmt.Errorf("grants: %s: %w", f.path, err)
	}
	return gs, nil
}

// sealedAs is the additional data of sealed grants.
const sealedAs = "mcphost-grants"

// decode reads a grants file; s opens a sealed one.
func decode(b []byte, s *seal.Sealer) ([]Grant, error) {
	var doc fileDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("not a grants file: %w", err)
	}
	if doc.Version != 1 {
		return nil, fmt.Errorf("grants file version %d; this mcphost reads version 1", doc.Version)
	}
	if doc.Sealed == "" {
		return doc.Grants, nil
	}
	if s == nil {
		return nil, errors.New("the grants are sealed; give the key they were sealed with")
	}
	plain, err := s.Open(doc.Sealed, sealedAs)
	switch {
	case errors.Is(err, seal.ErrWrongKey):
		return nil, errors.New("the grants do not open with this key")
	case err != nil:
		return nil, errors.New("the sealed grants are damaged")
	}
	var gs []Grant
	if err := json.Unmarshal(plain, &gs); err != nil {
		return nil, fmt.Errorf("the sealed grants do not decode: %w", err)
	}
	return gs, nil
}

// write replaces the file whole: a temporary file in the same directory,
// synced, renamed over it, so a crash leaves the old or the new grants.
func (f *File) write(all []Grant) error {
	doc := fileDoc{Version: 1, Grants: all}
	if f.seal != nil {
		plain, err := json.Marshal(all)
		if err != nil {
			return err
		}
		sealed, err := f.seal.Seal(plain, sealedAs)
		if err != nil {
			return err
		}
		doc = fileDoc{Version: 1, Sealed: sealed}
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("grants: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(f.path)+".*")
	if err != nil {
		return fmt.Errorf("grants: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("grants: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("grants: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("grants: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("grants: %w", err)
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		return fmt.Errorf("grants: %w", err)
	}
	return nil
}

// Describe is a grant as `mcphost auth status` shows it: never a token.
func Describe(g Grant) string {
	who := "shared"
	if g.Subject != "" {
		who = "for " + g.Subject
	}
	exp := "no expiry"
	if !g.Expiry.IsZero() {
		exp = "expires " + g.Expiry.Format(time.RFC3339)
	}
	refresh := "no refresh token"
	if g.RefreshToken != "" {
		refresh = "refreshable"
	}
	scopes := strings.Join(g.Scopes, " ")
	if scopes == "" {
		scopes = "(no scopes)"
	}
	return fmt.Sprintf("%s %s: %s, %s, scopes %s, updated %s", g.Server, who, exp, refresh, scopes, g.Updated.Format(time.RFC3339))
}

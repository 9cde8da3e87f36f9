package usersecrets

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// memory is a store of secrets for the tests: by subject and name.
type memory struct {
	mu   sync.Mutex
	vals map[[2]string]Value
	rev  int64
}

func (m *memory) values(_ context.Context, subject string, names []string) (map[string]Value, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]Value{}
	for _, n := range names {
		if v, ok := m.vals[[2]string{subject, n}]; ok {
			out[n] = v
		}
	}
	return out, nil
}

func (m *memory) set(_ context.Context, subject, name string, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rev++
	m.vals[[2]string{subject, name}] = Value{Value: value, Version: m.rev}
	return nil
}

func key(name, value string) auth.Key {
	k := auth.KeyFromValue(name, value)
	k.Subject = name
	return k
}

// TestSecretPageBindsTheLink: a missing secret gives a Needed with the
// page's link; on the page, only the caller the link was issued to can
// give it (another caller's credential, a wrong one and a bad value are
// refused, and store nothing); once given, the link is spent and the
// caller's session gets the value.
func TestSecretPageBindsTheLink(t *testing.T) {
	m := &memory{vals: map[[2]string]Value{}}
	a, err := auth.New(auth.Config{Keys: []auth.Key{key("alice", "alice-key-0123456789"), key("bob", "bob-key-0123456789ab")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var base string
	k := New(Options{Values: m.values, Set: m.set, Base: func() string { return base }})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { k.Serve(w, r, a) }))
	defer srv.Close()
	base = srv.URL

	bob := &auth.Identity{Method: "key", Subject: "bob"}
	_, err = k.CallerSecrets(context.Background(), "gh", bob, []string{"GITHUB_TOKEN"})
	var need *Needed
	if !errors.As(err, &need) || !errors.Is(err, upstream.ErrSecretNeeded) || !strings.HasPrefix(need.URL, srv.URL+SecretPath+"?request=") {
		t.Fatalf("without the secret: %v", err)
	}
	if _, again := k.CallerSecrets(context.Background(), "gh", bob, []string{"GITHUB_TOKEN"}); again == nil || again.(*Needed).URL != need.URL {
		t.Errorf("a second call got another link: %v", again)
	}
	if resp, err := http.Get(need.URL); err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("GET the page: %v %v", resp, err)
	}
	id := need.req.id
	post := func(credential, value string) (int, string) {
		t.Helper()
		resp, err := http.PostForm(srv.URL+SecretPath, url.Values{"request": {id}, "credential": {credential}, "value.GITHUB_TOKEN": {value}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		credential, value string
		status            int
		says              string
	}{
		{"alice-key-0123456789", "alice-sets-bobs", http.StatusForbidden, "issued to mcphost user bob, and you are alice"},
		{"not-a-key-at-all-000", "x", http.StatusForbidden, "not a credential of this mcphost"},
		{"bob-key-0123456789ab", "", http.StatusBadRequest, "the value is empty"},
		{"bob-key-0123456789ab", "two\nlines", http.StatusBadRequest, "control character"},
	} {
		if status, page := post(c.credential, c.value); status != c.status || !strings.Contains(page, c.says) {
			t.Errorf("%q, %q: %d %q; want %d saying %q", c.credential, c.value, status, page, c.status, c.says)
		}
	}
	if len(m.vals) != 0 {
		t.Fatalf("refused posts stored %v", m.vals)
	}
	if status, page := post("bob-key-0123456789ab", "ghp_bob"); status != http.StatusOK || strings.Contains(page, "ghp_bob") {
		t.Fatalf("bob's post: %d %q", status, page)
	}
	select {
	case <-need.req.done:
	default:
		t.Error("the waiting call was not woken")
	}
	if status, _ := post("bob-key-0123456789ab", "ghp_again"); status != http.StatusBadRequest {
		t.Errorf("a spent link answered %d", status)
	}
	got, err := k.CallerSecrets(context.Background(), "gh", bob, []string{"GITHUB_TOKEN"})
	if err != nil || got["GITHUB_TOKEN"].Value != "ghp_bob" || got["GITHUB_TOKEN"].Version == 0 {
		t.Errorf("bob's secrets after he gave them: %v %v", got, err)
	}
	if _, err := k.CallerSecrets(context.Background(), "gh", &auth.Identity{Method: "key", Subject: "alice"}, []string{"GITHUB_TOKEN"}); !errors.Is(err, upstream.ErrSecretNeeded) {
		t.Errorf("alice got bob's secret: %v", err)
	}
}

// TestSecretPageWithoutAuth: a listener that no longer authenticates
// cannot tell whose a link is: nothing is stored.
func TestSecretPageWithoutAuth(t *testing.T) {
	m := &memory{vals: map[[2]string]Value{}}
	k := New(Options{Values: m.values, Set: m.set})
	_, err := k.CallerSecrets(context.Background(), "gh", &auth.Identity{Subject: "bob"}, []string{"T"})
	var need *Needed
	if !errors.As(err, &need) {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, SecretPath, strings.NewReader(url.Values{"request": {need.req.id}, "value.T": {"v"}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	k.Serve(w, r, nil)
	if w.Code != http.StatusForbidden || len(m.vals) != 0 {
		t.Errorf("%d, stored %v", w.Code, m.vals)
	}
}

func TestVersionsDiff(t *testing.T) {
	old := Versions{{"alice", "A"}: 1, {"alice", "B"}: 2, {"bob", "A"}: 3, {"carol", "A"}: 4}
	next := Versions{{"alice", "A"}: 5, {"alice", "B"}: 2, {"bob", "A"}: 3, {"dave", "A"}: 6}
	got := old.Diff(next)
	want := []Changed{{"alice", map[string]int64{"A": 5}}, {"carol", map[string]int64{"A": 0}}, {"dave", map[string]int64{"A": 6}}}
	if len(got) != len(want) {
		t.Fatalf("diff %v, want %v", got, want)
	}
	for i := range want {
		if got[i].Subject != want[i].Subject || len(got[i].Versions) != len(want[i].Versions) {
			t.Fatalf("diff %v, want %v", got, want)
		}
		for n, v := range want[i].Versions {
			if got[i].Versions[n] != v {
				t.Errorf("%s %s: %d, want %d", want[i].Subject, n, got[i].Versions[n], v)
			}
		}
	}
}

func TestCheckValue(t *testing.T) {
	for v, ok := range map[string]bool{"ghp_0123": true, "with\ttab": true, "": false, "a\x00b": false, "a\rb": false, "a\x7fb": false, strings.Repeat("x", MaxValue): true, strings.Repeat("x", MaxValue+1): false} {
		if err := CheckValue([]byte(v)); (err == nil) != ok {
			t.Errorf("CheckValue(%.20q): %v", v, err)
		}
	}
}

package usersecrets

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/host/auth"
)

// FuzzSecretPage posts arbitrary bodies to the secret page of a link
// issued to bob: it never panics, stores only with bob's own key and a
// value CheckValue takes, and then answers with the fixed page, which
// quotes nothing posted.
func FuzzSecretPage(f *testing.F) {
	const bobCredential = "bob-key-0123456789ab"
	for _, s := range []string{
		"request=ID&credential=" + bobCredential + "&value.T=ghp_1",
		"request=ID&credential=alice-key-0123456789&value.T=x",
		"request=ID&credential=&value.T=",
		"request=ID&request=other&credential=" + bobCredential + "&value.T=a%0Ab",
		"request=ID&credential=" + bobCredential + "&value.T=%00",
		"%zz", "", "request=ID&value.T=" + strings.Repeat("v", 9000),
	} {
		f.Add([]byte(s))
	}
	a, err := auth.New(auth.Config{Keys: []auth.Key{key("alice", "alice-key-0123456789"), key("bob", bobCredential)}}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m := &memory{vals: map[[2]string]Value{}}
		k := New(Options{Values: m.values, Set: m.set})
		_, err := k.CallerSecrets(context.Background(), "gh", &auth.Identity{Subject: "bob"}, []string{"T"})
		var need *Needed
		if !errors.As(err, &need) {
			t.Fatal(err)
		}
		body = bytes.ReplaceAll(body, []byte("request=ID"), []byte("request="+need.req.id))
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, SecretPath, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		k.Serve(w, r, a)
		stored, ok := m.vals[[2]string{"bob", "T"}]
		if ok != (w.Code == http.StatusOK) {
			t.Fatalf("answered %d, stored %v", w.Code, ok)
		}
		if ok {
			if r.PostFormValue("credential") != bobCredential || CheckValue(stored.Value) != nil {
				t.Fatalf("stored %q with credential %q", stored.Value, r.PostFormValue("credential"))
			}
			if w.Body.String() != savedPage("gh") {
				t.Fatalf("the answer is not the fixed one: %q", w.Body.String())
			}
		}
		if len(m.vals) > 1 {
			t.Fatalf("stored %v", m.vals)
		}
	})
}

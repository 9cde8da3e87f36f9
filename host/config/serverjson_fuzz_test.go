package config_test

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/host/config"
)

// FuzzServerSpec: any body the admin API receives is decoded and checked
// without panicking, an accepted one renders back to a server, and a
// refused one is a *SpecError (the API's 400 or 422), never another error.
// What Split shows of an accepted one holds no arg that secret_args lists
// and, under secret_url, no part of the URL's path; Keep gives it back,
// but not its headers to another host.
func FuzzServerSpec(f *testing.F) {
	for _, s := range []string{
		`{"name":"files","transport":"stdio","command":"sh","args":["-c","x"],"env":{"A":"b"}}`,
		`{"name":"r","transport":"http","url":"https://x/mcp","headers":{"Authorization":"Bearer ${x}"}}`,
		`{"name":"o","transport":"streamable-http","url":"https://x","oauth":{"grant":"client_credentials","client_id":"a","client_secret":"b"}}`,
		`{"name":"\u0000","command":"%{if}"}`, `[]`, `{"name":1}`, `{"max_sessions":1e99}`,
		`{"name":"s","command":"sh","args":["--token","T0K3N-1234"],"secret_args":[1]}`,
		`{"name":"u","transport":"sse","url":"https://x/k/S3CR3T-PATH/sse?a=b","secret_url":true}`,
		`{"name":"k","command":"sh","env":{"for":"x"}}`, `{"name":"k","transport":"http","url":"https://x","headers":{"${x}":"%{y}"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		spec, err := config.DecodeServerSpec(body)
		if err != nil {
			return
		}
		sc, err := spec.Server("/etc/mcphost/config.hcl")
		var se *config.SpecError
		switch {
		case err == nil && sc.Name != spec.Name:
			t.Fatalf("name %q became %q", spec.Name, sc.Name)
		case err != nil && !errors.As(err, &se):
			// The API would answer 503 to a definition it should refuse.
			t.Fatalf("%s: not a *SpecError: %v", body, err)
		}
		if err != nil {
			return
		}
		if _, err := spec.Keep(nil, config.SpecSecrets{}); err != nil {
			return // a masked value in a new definition: refused, as POST does
		}
		pub, sec := spec.Split()
		for _, i := range spec.SecretArgs {
			if pub.Args[i] != config.Masked {
				t.Fatalf("%s: secret arg %d shown as %q", body, i, pub.Args[i])
			}
		}
		if u, err := url.Parse(spec.URL); spec.SecretURL && err == nil && len(u.EscapedPath()) > 1 {
			if shown, err := url.Parse(pub.URL); err != nil || shown.EscapedPath() != "/"+config.Masked {
				t.Fatalf("%s: secret_url shows the path: %q", body, pub.URL)
			}
		}
		back, err := pub.Keep(&pub, sec)
		if err != nil {
			t.Fatalf("%s: the split definition is not kept: %v", body, err)
		}
		if !slices.Equal(back.Args, spec.Args) || back.URL != spec.URL {
			t.Fatalf("%s: kept as args %q url %q", body, back.Args, back.URL)
		}
		// Pointed at another host, it keeps no header.
		moved := pub
		moved.URL = "https://elsewhere.invalid/mcp"
		if _, err := moved.Keep(&pub, sec); err == nil && len(pub.Headers) > 0 && !strings.Contains(strings.ToLower(spec.URL), "elsewhere.invalid") {
			t.Fatalf("%s: the stored headers follow the url to another host", body)
		}
	})
}

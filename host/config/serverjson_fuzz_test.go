package config_test

import (
	"errors"
	"testing"

	"github.com/mcphost-project/mcphost/host/config"
)

// FuzzServerSpec: any body the admin API receives is decoded and checked
// without panicking, an accepted one renders back to a server, and a
// refused one is a *SpecError (the API's 400 or 422), never another error.
func FuzzServerSpec(f *testing.F) {
	for _, s := range []string{
		`{"name":"files","transport":"stdio","command":"sh","args":["-c","x"],"env":{"A":"b"}}`,
		`{"name":"r","transport":"http","url":"https://x/mcp","headers":{"Authorization":"Bearer ${x}"}}`,
		`{"name":"o","transport":"streamable-http","url":"https://x","oauth":{"grant":"client_credentials","client_id":"a","client_secret":"b"}}`,
		`{"name":"\u0000","command":"%{if}"}`, `[]`, `{"name":1}`, `{"max_sessions":1e99}`,
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
	})
}

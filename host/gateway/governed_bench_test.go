package gateway

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/filters"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/plugins"
)

// BenchmarkResourcesRead measures resources/read of a short text resource
// through the gateway over loopback HTTP, by policy chain: none; a chain
// of tool policies only (titles), which wants no hook of resources/read;
// builtin:redact on a resource with nothing that looks like a credential
// (its keywords hint skips the guest); and on one holding a secret (the
// guest masks it).
func BenchmarkResourcesRead(b *testing.B) {
	ctx := context.Background()
	rt, err := plugins.NewRuntime(ctx, plugins.RuntimeOptions{CacheDir: b.TempDir(), Builtin: filters.Builtin})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close(ctx) })
	titles := []plugins.Spec{{Name: "titles", Source: "builtin:titles"}}
	redact := []plugins.Spec{{Name: "redact", Source: "builtin:redact"}}
	for _, bc := range []struct {
		name  string
		specs []plugins.Spec
		uri   string
	}{
		{"policy=none", nil, "public://readme"},
		{"policy=tools-only", titles, "public://readme"},
		{"policy=redact/clean", redact, "public://readme"},
		{"policy=redact/secret", redact, "secret://note"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			opts := &Options{}
			if bc.specs != nil {
				mgr, err := plugins.NewManager(rt, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { mgr.Close(ctx) })
				if err := mgr.Reload(ctx, bc.specs); err != nil {
					b.Fatal(err)
				}
				opts.Policy = mgr
			}
			up := stdioServer("s", "-secrets")
			up.Env = map[string]string{"HOSTILE_SECRET": "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3sXYZ"}
			h := startHost(b, Config{Servers: []upstream.ServerConfig{up}}, opts)
			cs := connectHTTP(b, h, nil)
			read := func() string {
				res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: bc.uri})
				if err != nil {
					b.Fatal(err)
				}
				return res.Contents[0].Text
			}
			if text := read(); strings.Contains(text, "ghp_R4nd") {
				b.Fatalf("secret not masked: %q", text)
			}
			for b.Loop() {
				read()
			}
		})
	}
}

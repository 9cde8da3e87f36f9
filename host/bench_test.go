package host

import (
	"context"
	"testing"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// BenchmarkToolsListCached measures a cached tools/list of 1000 tools over
// streamable HTTP: what a client pays once the catalog and policies are
// settled.
func BenchmarkToolsListCached(b *testing.B) {
	dir := b.TempDir()
	bins, err := testproc.Build(dir, map[string]string{"manytools": "../internal/bench/testdata/manytools"})
	if err != nil {
		b.Fatal(err)
	}
	var servers []ServerConfig
	for i := range 10 {
		name := "s" + string(rune('a'+i))
		servers = append(servers, ServerConfig{Name: name, Command: bins["manytools"], Args: []string{"-tools", "100", "-name", name}})
	}
	h, err := New(Config{Servers: servers}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	if err := h.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	cs := connectHTTP(b, h, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(res.Tools) < 1000 {
		b.Fatalf("%v, %d tools", err, len(res.Tools))
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
	}
}

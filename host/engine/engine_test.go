package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/engine"
	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// TestReloadSaysListenWaitsForRestart: a reload that changes auth applies
// it silently; one that changes another listen setting says the listener
// keeps it until a restart.
func TestReloadSaysListenWaitsForRestart(t *testing.T) {
	t.Parallel()
	up := demoServer()
	defer up.Close()
	ctx := context.Background()
	servers := []upstream.ServerConfig{{Name: "demo", Transport: upstream.TransportStreamableHTTP, URL: up.URL}}
	logs := &testproc.Buffer{}
	e, err := engine.Start(ctx, &config.File{Host: gateway.Config{Servers: servers}}, &engine.Options{Logger: hclog.New(&hclog.LoggerOptions{Output: logs})})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	same := &config.File{Host: gateway.Config{Servers: servers}}
	if err := e.Reload(ctx, same); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "listen block changed") {
		t.Fatalf("warned with listen unchanged:\n%s", logs.String())
	}
	k := auth.KeyFromValue("a", "a-key-0123456789abcdef")
	k.Subject = "a"
	changed := &config.File{Host: gateway.Config{Servers: servers, Listen: listener.Config{Auth: &auth.Config{Keys: []auth.Key{k}}}}}
	if err := e.Reload(ctx, changed); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "listen block changed") {
		t.Errorf("warned for an auth change, which applies at once:\n%s", logs.String())
	}
	limited := *changed
	limited.Host.Listen.MaxSessions = 7
	if err := e.Reload(ctx, &limited); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "listen block changed") {
		t.Errorf("no warning that listen waits for a restart:\n%s", logs.String())
	}
}

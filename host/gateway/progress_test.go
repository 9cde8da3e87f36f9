package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// TestProgressInjection: an upstream cannot send progress into a call it
// was not given. While one client's call to server b runs, server a sends
// progress for the very token b was given, and for tokens of the form
// mcphost used to number; none of it reaches the client, whose own
// progress from b arrives before and after.
func TestProgressInjection(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a"), stdioServer("b")}}, nil)
	var (
		mu   sync.Mutex
		seen []string
		up   = make(chan string, 1) // the token b was given
	)
	victim := connectHTTP(t, h, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		seen = append(seen, req.Params.Message)
		first := len(seen) == 1
		mu.Unlock()
		if first {
			up <- req.Params.Message
		}
	}})
	attacker := connectHTTP(t, h, nil)

	release := filepath.Join(t.TempDir(), "release")
	done := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "b__hold", Arguments: map[string]any{"text": release}}
		params.SetProgressToken("victim-token")
		_, err := victim.CallTool(context.Background(), params)
		done <- err
	}()
	var token string
	select {
	case token = <-up:
	case <-time.After(10 * time.Second):
		t.Fatal("no progress from b")
	}
	guesses := []string{token}
	for i := range 50 {
		guesses = append(guesses, fmt.Sprintf("mcphost-%d", i))
	}
	if text, isErr := callText(t, attacker, "a__progress_spray", map[string]any{"text": strings.Join(guesses, ",")}); isErr {
		t.Fatalf("progress_spray: %s", text)
	}
	// a's notifications came before its answer; b's "done" comes after
	// both, on the victim's stream in order.
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	testproc.WaitFor(t, `b's progress "done"`, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(seen, "done")
	})
	mu.Lock()
	defer mu.Unlock()
	for _, m := range seen {
		if m == "injected" {
			t.Fatalf("server a's progress reached a call to server b: %q", seen)
		}
	}
	if strings.HasPrefix(token, "mcphost-") && len(token) < len("mcphost-")+20 {
		t.Errorf("the token b was given, %q, is short enough to guess", token)
	}
}

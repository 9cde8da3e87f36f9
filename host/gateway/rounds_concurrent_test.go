package gateway

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// TestRoundsConcurrentOneIdentity: two calls in rounds by one identity at
// once (2026-07-28, each asking its client for sampling) both finish with
// their own answers, on shared and per-client upstream sessions.
func TestRoundsConcurrentOneIdentity(t *testing.T) {
	for _, mode := range []string{upstream.SessionsShared, upstream.SessionsPerClient} {
		t.Run(mode, func(t *testing.T) {
			sc := stdioServer("a")
			sc.Sessions = mode
			h := startHost(t, Config{Listen: listener.Config{Auth: testAuth}, Servers: []upstream.ServerConfig{sc}}, nil)
			url := httptestServer(t, h) + "/mcp"
			ctx := context.Background()
			var c samplingClient
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "rounds"}, c.options()).Connect(ctx,
				&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: authClient("alice-key-0123456789")}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			for i := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					want := fmt.Sprintf("call %d", i)
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__sample", Arguments: map[string]any{"text": want}})
					switch {
					case err != nil:
						errs <- fmt.Errorf("%s: %v", want, err)
					case len(res.Content) == 0:
						errs <- fmt.Errorf("%s: no content", want)
					case res.IsError:
						errs <- fmt.Errorf("%s: %q", want, res.Content[0].(*mcp.TextContent).Text)
					default:
						if got := res.Content[0].(*mcp.TextContent).Text; got != "echo: "+want {
							errs <- fmt.Errorf("%s answered %q", want, got)
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

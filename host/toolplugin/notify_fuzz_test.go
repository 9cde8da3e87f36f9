package toolplugin

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzClientCall: what a guest passes to the progress and log host
// functions is outside input. Whatever it holds, decoding must not panic,
// and what reaches the client is a progress with the call's own token, or
// a log message of a level MCP defines.
func FuzzClientCall(f *testing.F) {
	for _, s := range []string{
		`{"progress":1,"total":3,"message":"step 1"}`, `{"progress":"x"}`, `{}`, `[]`, ``,
		`{"level":"info","data":{"a":1}}`, `{"level":"loud","data":1}`, `{"level":"error","logger":"l","data":"s"}`,
		`{"level":"debug","data":}`, `{"level":"warning"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var progressed *mcp.ProgressNotificationParams
		var logged *mcp.LoggingMessageParams
		c := &clientCall{token: "tok",
			progress: func(_ context.Context, p *mcp.ProgressNotificationParams) error { progressed = p; return nil },
			log:      func(_ context.Context, p *mcp.LoggingMessageParams) (bool, error) { logged = p; return true, nil },
		}
		ctx := context.Background()
		if ok, err := c.Progress(ctx, data); ok != (err == nil) || (ok && (progressed == nil || progressed.ProgressToken != "tok")) {
			t.Fatalf("progress %q: %v %v %+v", data, ok, err, progressed)
		}
		if ok, err := c.Log(ctx, data); ok {
			if err != nil || logged == nil || logRank(logged.Level) < 0 {
				t.Fatalf("log %q: %v %+v", data, err, logged)
			}
		}
	})
}

func logRank(l mcp.LoggingLevel) int {
	for i, x := range []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"} {
		if l == x {
			return i
		}
	}
	return -1
}

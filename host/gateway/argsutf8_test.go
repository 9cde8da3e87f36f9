package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/upstream"
)

// TestInvalidUTF8Arguments calls a stdio upstream's tool with arguments
// that are not valid UTF-8: the gateway refuses them with invalid params
// (-32602) at once, and the session keeps working.
func TestInvalidUTF8Arguments(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	cs := connectHTTP(t, h, nil)
	for _, args := range []string{"{\"text\":\"\xff\"}", "{\"te\xc3xt\":\"x\"}", "{\"text\":\"ok\",\"n\":[\"\xed\xa0\x80\"]}"} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__echo", Arguments: json.RawMessage(args)})
		cancel()
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("arguments %q: %v, want a -32602 invalid params error", args, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__echo", Arguments: map[string]any{"text": "héllo"}})
	if err != nil || text(t, res) != "héllo" {
		t.Fatalf("a valid call afterwards: %v", err)
	}
}

// FuzzCheckArguments: arguments pass exactly when they are valid UTF-8,
// and the refusal names an offset inside them.
func FuzzCheckArguments(f *testing.F) {
	for _, s := range []string{"", "{}", "{\"a\":\"\xff\"}", "{\"a\":\"é\"}", "\xed\xa0\x80", "\xf4\x90\x80\x80"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := upstream.CheckArguments(b)
		if (err == nil) != utf8.Valid(b) {
			t.Fatalf("checkArguments(%q) = %v", b, err)
		}
		if err != nil && !errors.Is(err, upstream.ErrInvalidArguments) {
			t.Fatalf("error %v is not ErrInvalidArguments", err)
		}
	})
}

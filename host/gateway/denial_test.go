package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// rudePolicy denies echo with a reason full of raw bytes and fails every
// other call with an engine-style error that carries a stack trace.
type rudePolicy struct{ ToolsOnly }

func (rudePolicy) ToolsList(_ context.Context, in *abi.ToolsListInput) ([]abi.Tool, error) {
	return in.Tools, nil
}

func (rudePolicy) ToolCall(_ context.Context, in *abi.ToolCallInput) (*abi.CallDecision, error) {
	if in.Tool == "echo" {
		return &abi.CallDecision{Action: abi.ActionDeny, Reason: "no\n\x1b[31mway\xff\xfe\u202e" + strings.Repeat("x", 5000)}, nil
	}
	return nil, errors.New("plugins: policy \"p\" failed in tool_call: wasm error: unreachable\nwasm stack trace:\n\tpolicy.$f(i64) i64\n\tpolicy.tool_call() i32")
}

func (rudePolicy) ToolResult(_ context.Context, in *abi.ToolResultInput) (*abi.CallToolResult, error) {
	return in.Result, nil
}

func (rudePolicy) Generation() uint64 { return 1 }

// TestDenialMessagesAreClean: a client is told one bounded line of
// printable text whatever a policy's reason or error holds.
func TestDenialMessagesAreClean(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, &Options{Policy: rudePolicy{}})
	cs := connectHTTP(t, h, nil)
	for tool, want := range map[string]string{
		"a__echo": "call to a__echo denied: no [31mway\uFFFD xxx",
		"a__pid":  `call to a__pid refused: plugins: policy "p" failed in tool_call: wasm error: unreachable`,
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "x"}})
		if err != nil {
			t.Fatal(err)
		}
		msg := text(t, res)
		if !res.IsError || !strings.HasPrefix(msg, want) {
			t.Errorf("%s: %q, want it to start with %q", tool, msg, want)
		}
		if len(msg) > wire.MaxClientMessage+100 || strings.Contains(msg, "stack trace") {
			t.Errorf("%s: %d bytes: %q", tool, len(msg), msg)
		}
		for _, r := range msg {
			if !unicode.IsPrint(r) && r != ' ' {
				t.Errorf("%s: unprintable %U in %q", tool, r, msg)
			}
		}
	}
}

func FuzzCleanText(f *testing.F) {
	for _, s := range []string{"", "plain", "a\nb\tc", "\x1b[2J\xff", "\u202eevil", strings.Repeat("é", 400)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := wire.CleanText(s)
		if !utf8.ValidString(out) || len(out) > wire.MaxClientMessage {
			t.Fatalf("cleanText(%q) = %q (%d bytes)", s, out, len(out))
		}
		for _, r := range out {
			if !unicode.IsPrint(r) && r != ' ' {
				t.Fatalf("cleanText(%q) keeps %U", s, r)
			}
		}
		if strings.HasPrefix(out, " ") || strings.Contains(out, "  ") {
			t.Fatalf("cleanText(%q) = %q: spaces not collapsed", s, out)
		}
	})
}

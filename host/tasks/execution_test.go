package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcphost-project/mcphost/host/internal/paramheader"
)

func TestPlain(t *testing.T) {
	ctx := context.Background()
	for _, e := range []string{``, `{}`, `{"taskSupport":"optional"}`, `{"taskSupport":"forbidden"}`, `"required"`, `{"taskSupport":1}`, `{"TaskSupport":"required"}`} {
		if err := Plain(ctx, "t", json.RawMessage(e)); err != nil {
			t.Errorf("a plain call with execution %s: %v", e, err)
		}
	}
	required := json.RawMessage(`{"taskSupport":"required"}`)
	var werr *jsonrpc.Error
	if err := Plain(ctx, "t", required); !errors.As(err, &werr) || werr.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("a plain call of a required tool: %v, want -32601", err)
	}
	if err := Plain(AsTask(ctx), "t", required); err != nil {
		t.Errorf("a task call of a required tool: %v", err)
	}
	// A 2026-07-28 request is from a client without the tasks extension.
	newer := paramheader.WithIncoming(ctx, http.Header{"Mcp-Protocol-Version": {"2026-07-28"}})
	if err := Plain(newer, "t", required); !errors.As(err, &werr) || werr.Code != CodeMissingCapability || !strings.Contains(string(werr.Data), Extension) {
		t.Errorf("a 2026-07-28 plain call of a required tool: %v, want -32021 naming the extension", err)
	}
	older := paramheader.WithIncoming(ctx, http.Header{"Mcp-Protocol-Version": {"2025-11-25"}})
	if err := Plain(older, "t", required); !errors.As(err, &werr) || werr.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("a 2025-11-25 plain call over HTTP of a required tool: %v, want -32601", err)
	}
}

// FuzzRequired: an execution object comes from a server or a policy.
// Required holds only for an object whose taskSupport is "required".
func FuzzRequired(f *testing.F) {
	for _, s := range []string{`{"taskSupport":"required"}`, `{"taskSupport":"optional"}`, `{}`, `null`, `"required"`, `{"taskSupport":["required"]}`, `{"TaskSupport":"required"}`, `{"taskSupport":"required","taskSupport":"optional"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !Required(data) {
			return
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("Required(%q) of no object", data)
		}
		if m["taskSupport"] != "required" {
			t.Fatalf("Required(%q) without taskSupport \"required\"", data)
		}
	})
}

package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// A tool's execution object (MCP 2025-11-25: {"taskSupport": "forbidden" |
// "optional" | "required"}) says whether a client may, or must, call it as
// a task. The go-sdk's mcp.Tool has no such member, so its listing loses
// it. Only a server that offers tasks has a say that mcphost passes on
// (for any other, mcphost runs tasks itself: host/tasks decides), and
// those are the servers mcphost already sends requests of its own
// (TaskRequest): for them it lists the tools once more that way, reading
// only each tool's name and execution. (docs/RATIONALE.md says why not
// the bytes the go-sdk read.)

// maxExecutionPages bounds the pages of one listing of executions, so a
// server whose cursors never end cannot keep a connect waiting.
const maxExecutionPages = 100

// listExecutions returns the execution object of each tool of cs's server,
// by tool name, when the server offers tasks; nil otherwise. A failure is
// logged and leaves what was read: those tools are listed without.
func (u *Server) listExecutions(ctx context.Context, cs *mcp.ClientSession) map[string]json.RawMessage {
	if v, _ := u.taskConns.Load(cs); v == nil || !v.(*taskConn).offers {
		return nil
	}
	out := map[string]json.RawMessage{}
	params := json.RawMessage(`{}`)
	for range maxExecutionPages {
		raw, err := u.TaskRequest(ctx, cs, "tools/list", params)
		var next string
		if err == nil {
			next, err = DecodeExecutions(raw, out)
		}
		if err != nil {
			u.log.Warn("listing the tools' execution (task support) failed; they are listed without it", "error", u.MaskMarked(err))
			return out
		}
		if next == "" {
			return out
		}
		params, _ = json.Marshal(map[string]string{"cursor": next})
	}
	u.log.Warn("listing the tools' execution (task support): more than the page limit; the rest are listed without it", "pages", maxExecutionPages)
	return out
}

// DecodeExecutions reads a tools/list result, adding each tool's execution
// object (an object; anything else is left out) to into by tool name, and
// returns the result's nextCursor. Member names match exactly, as clients
// read them.
func DecodeExecutions(result json.RawMessage, into map[string]json.RawMessage) (nextCursor string, err error) {
	var res struct {
		Tools      []map[string]json.RawMessage `json:"tools"`
		NextCursor string                       `json:"nextCursor"`
	}
	if _, err := segjson.Parse(result, &res, segjson.DontMatchCaseInsensitiveStructFields); err != nil {
		return "", fmt.Errorf("tools/list result: %w", err)
	}
	for _, t := range res.Tools {
		var name string
		if e := bytes.TrimSpace(t["execution"]); len(e) > 0 && e[0] == '{' && json.Unmarshal(t["name"], &name) == nil && name != "" {
			into[name] = append(json.RawMessage(nil), e...)
		}
	}
	return res.NextCursor, nil
}

// CachedExecutions returns the execution objects the server gave its
// tools when they were last listed, by tool name: nil for a server that
// does not offer tasks (OffersTasks).
func (u *Server) CachedExecutions() map[string]json.RawMessage {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.execs
}

package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// listMethods are the list methods mcphost answers itself, with the member
// that names what each lists.
var listMethods = map[string]string{
	"tools/list":               "tools",
	"prompts/list":             "prompts",
	"resources/list":           "resources",
	"resources/templates/list": "resourceTemplates",
}

// A session at a protocol before 2026-07-28 gets list results without the
// cache fields (ttlMs, cacheScope) that only 2026-07-28 defines, whether
// the tools/list shortcut or the go-sdk answers.
func TestListResultsCarryWhatTheVersionDefines(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("local"), everythingServer("every")}}, nil)
	url := httptestServer(t, h) + "/mcp"
	for _, v := range []string{"2025-06-18", "2025-11-25"} {
		t.Run(v, func(t *testing.T) {
			c := mcp.NewClient(&mcp.Implementation{Name: "old", Version: "1"}, nil)
			cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != v {
				t.Fatalf("negotiated %s, want %s", got, v)
			}
			if err := cs.Ping(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			s := rawSession{t: t, url: url, id: cs.ID(), version: v}
			check := func(how, method string, result json.RawMessage) {
				t.Helper()
				var m map[string]json.RawMessage
				if err := json.Unmarshal(result, &m); err != nil {
					t.Fatalf("%s %s: %v", how, method, err)
				}
				if _, ok := m[listMethods[method]]; !ok {
					t.Errorf("%s %s: no %q in %s", how, method, listMethods[method], result)
				}
				for _, k := range []string{"ttlMs", "cacheScope", "resultType"} {
					if _, ok := m[k]; ok {
						t.Errorf("%s %s at %s carries %q: %.200s", how, method, v, k, result)
					}
				}
			}
			fast, shortcut := message(t, s.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil))
			if !shortcut {
				t.Error("a plain tools/list did not take the shortcut")
			}
			check("shortcut", "tools/list", fast.Result)
			for method := range listMethods {
				// Without the version header the go-sdk answers.
				slow, shortcut := message(t, s.post(`{"jsonrpc":"2.0","id":2,"method":"`+method+`"}`, func(r *http.Request) {
					r.Header.Del("Mcp-Protocol-Version")
				}))
				if shortcut {
					t.Fatalf("%s took the shortcut", method)
				}
				check("go-sdk", method, slow.Result)
			}
		})
	}
}

// A 2026-07-28 session (served in memory, as embedders and stdio serve it)
// gets the cache fields that version requires, with a cacheScope it
// defines.
func TestListResultsAt20260728(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("local"), everythingServer("every")}}, nil)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := h.MCPServer(DownstreamEmbedded).Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	var log testproc.Buffer
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "new"}, nil).Connect(context.Background(), &mcp.LoggingTransport{Transport: ct, Writer: &log}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != "2026-07-28" {
		t.Skipf("negotiated %s in memory", got)
	}
	ctx := context.Background()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ListPrompts(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ListResources(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ListResourceTemplates(ctx, nil); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(log.Bytes()))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "read: ")
		if !ok {
			continue
		}
		var msg struct {
			Result map[string]json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(line), &msg) != nil || msg.Result == nil {
			continue
		}
		for method, member := range listMethods {
			if _, ok := msg.Result[member]; !ok {
				continue
			}
			seen[method] = true
			var ttl int
			if err := json.Unmarshal(msg.Result["ttlMs"], &ttl); err != nil || ttl < 0 {
				t.Errorf("%s: ttlMs %s", method, msg.Result["ttlMs"])
			}
			var scope string
			if err := json.Unmarshal(msg.Result["cacheScope"], &scope); err != nil || (scope != "public" && scope != "private") {
				t.Errorf("%s: cacheScope %s, want \"public\" or \"private\"", method, msg.Result["cacheScope"])
			}
		}
	}
	for method := range listMethods {
		if !seen[method] {
			t.Errorf("no %s result in the log:\n%s", method, log.Bytes())
		}
	}
}

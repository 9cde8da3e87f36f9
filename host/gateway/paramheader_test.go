package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// regionPolicy passes everything, but rewrites a call's region
// "rewrite-me" to "from-policy".
type regionPolicy struct{ maskPolicy }

func (regionPolicy) ToolCall(_ context.Context, in *abi.ToolCallInput) (*abi.CallDecision, error) {
	if strings.Contains(string(in.Arguments), `"rewrite-me"`) {
		return &abi.CallDecision{Action: abi.ActionRewrite, Arguments: json.RawMessage(`{"region":"from-policy"}`)}, nil
	}
	return &abi.CallDecision{Action: abi.ActionAllow}, nil
}

// Mcp-Param-* headers (x-mcp-header tools, protocol 2026-07-28): the go-sdk
// client sends them, mcphost checks them, and an HTTP upstream is sent the
// headers of the arguments it is really sent, whatever the client's
// protocol.
func TestParamHeadersForwarded(t *testing.T) {
	addr := testproc.FreeAddr(t)
	startProcess(t, addr, upstreamBin, "-name", "r", "-apps", "-http", addr)
	h := startHost(t, Config{Servers: []upstream.ServerConfig{{Name: "r", Transport: upstream.TransportStreamableHTTP, URL: "http://" + addr + "/mcp"}}},
		&Options{Policy: regionPolicy{}})
	ctx := context.Background()
	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		cs := connectHTTPAt(t, h, v, nil)
		if _, err := cs.ListTools(ctx, nil); err != nil { // the go-sdk client reads x-mcp-header from its listing
			t.Fatal(err)
		}
		for region, want := range map[string]string{"us-west1": "us-west1", "Zürich": "=?base64?WsO8cmljaA==?=", "rewrite-me": "from-policy"} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "r__region", Arguments: map[string]any{"region": region}})
			if err != nil {
				t.Fatalf("%s: %s: %v", v, region, err)
			}
			if got := text(t, res); got != want {
				t.Errorf("%s: region %q: the upstream was sent Mcp-Param-Region %q, want %q", v, region, got, want)
			}
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "r__region", Arguments: map[string]any{"query": "q"}})
		if err != nil || text(t, res) != "(no header)" {
			t.Errorf("%s: without a region: %v %v", v, err, res)
		}
	}
}

// A tools/call whose Mcp-Param-* headers disagree with its arguments is
// refused with HeaderMismatch and HTTP 400, on the sessionless path (the
// go-sdk's handler) and on a session's shortcut (fastcall.go); a missing
// header is refused only at 2026-07-28.
func TestParamHeadersChecked(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("s", "-apps")}}, nil)
	url := httptestServer(t, h) + "/mcp"
	_, session := connectAs(t, url, "c")
	call := func(sessionless bool, args string, hdr map[string]string) (int, string) {
		t.Helper()
		meta := ""
		if sessionless {
			meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
		}
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__region","arguments":` + args + meta + `}}`
		req, err := http.NewRequest("POST", url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sessionless {
			req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", "s__region")
		} else {
			req.Header.Set("Mcp-Protocol-Version", session.version)
			req.Header.Set("Mcp-Session-Id", session.id)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// A call in task mode is admitted as any call: its headers too.
	if status, body := call(false, `{"region":"us-west1"},"task":{"ttl":60000}`, map[string]string{"Mcp-Param-Region": "eu-west1"}); status != http.StatusBadRequest || !strings.Contains(body, `"code":-32020`) {
		t.Errorf("a task-mode call with a mismatched header: status %d, %s; want refused", status, body)
	}
	for _, sessionless := range []bool{true, false} {
		for _, tc := range []struct {
			name    string
			args    string
			hdr     map[string]string
			refused bool
		}{
			{"matching", `{"region":"us-west1"}`, map[string]string{"Mcp-Param-Region": "us-west1"}, false},
			{"matching in Base64", `{"region":"us-west1"}`, map[string]string{"Mcp-Param-Region": "=?base64?dXMtd2VzdDE=?="}, false},
			{"different", `{"region":"us-west1"}`, map[string]string{"Mcp-Param-Region": "eu-west1"}, true},
			{"for an absent argument", `{"query":"q"}`, map[string]string{"Mcp-Param-Region": "eu-west1"}, true},
			{"missing", `{"region":"us-west1"}`, nil, sessionless},
		} {
			status, body := call(sessionless, tc.args, tc.hdr)
			refused := status == http.StatusBadRequest && strings.Contains(body, `"code":-32020`)
			if refused != tc.refused || (!refused && (status != http.StatusOK || strings.Contains(body, `"error"`))) {
				t.Errorf("sessionless %v, %s: status %d, %s; want refused %v", sessionless, tc.name, status, body, tc.refused)
			}
		}
	}
}

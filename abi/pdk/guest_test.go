package pdk_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
)

func TestGuestCall(t *testing.T) {
	t.Parallel()
	toolCall := func(d *abi.CallDecision, err error) pdk.ToolCallFunc {
		return func(*abi.ToolCallInput) (*abi.CallDecision, error) { return d, err }
	}
	const callIn = `{"name":"a__b","server":"a","tool":"b"}`
	tests := []struct {
		name    string
		policy  pdk.Policy
		export  string
		input   string
		want    string // output, if wantErr is ""
		wantErr string
	}{
		{name: "describe lists only handled hooks", policy: pdk.Policy{Name: "p", ToolResult: func(*abi.ToolResultInput) (*abi.ToolResultOutput, error) { return nil, nil }},
			export: abi.ExportDescribe, want: `{"abi":"1.5","name":"p","hooks":["tool_result"]}`},
		{name: "no name", policy: pdk.Policy{ToolCall: toolCall(nil, nil)}, export: abi.ExportDescribe, wantErr: "pdk: policy has no name"},
		{name: "no handler at all", policy: pdk.Policy{Name: "p"}, export: abi.ExportDescribe, wantErr: `pdk: policy "p" has no hook handler`},
		{name: "missing handler", policy: pdk.Policy{Name: "p", ToolCall: toolCall(nil, nil)}, export: abi.ExportToolsList, input: `{}`, wantErr: "hook not implemented by this plugin: tools_list"},
		{name: "unknown export", policy: pdk.Policy{Name: "p", ToolCall: toolCall(nil, nil)}, export: "mcphost_other", wantErr: `pdk: unknown export "mcphost_other"`},
		{name: "nil decision allows", policy: pdk.Policy{Name: "p", ToolCall: toolCall(nil, nil)}, export: abi.ExportToolCall, input: callIn, want: `{"action":"allow"}`},
		{name: "handler error is passed as it is", policy: pdk.Policy{Name: "p", ToolCall: toolCall(nil, errors.New("no way"))}, export: abi.ExportToolCall, input: callIn, wantErr: "no way"},
		{name: "empty action", policy: pdk.Policy{Name: "p", ToolCall: toolCall(&abi.CallDecision{}, nil)}, export: abi.ExportToolCall, input: callIn, wantErr: "without an action"},
		{name: "unknown action", policy: pdk.Policy{Name: "p", ToolCall: toolCall(&abi.CallDecision{Action: "maybe"}, nil)}, export: abi.ExportToolCall, input: callIn, wantErr: `unknown action "maybe"`},
		{name: "rewrite needs an object", policy: pdk.Policy{Name: "p", ToolCall: toolCall(&abi.CallDecision{Action: abi.ActionRewrite, Arguments: json.RawMessage(`[1]`)}, nil)}, export: abi.ExportToolCall, input: callIn, wantErr: "not a JSON object"},
		{name: "respond needs a result", policy: pdk.Policy{Name: "p", ToolCall: toolCall(&abi.CallDecision{Action: abi.ActionRespond}, nil)}, export: abi.ExportToolCall, input: callIn, wantErr: "without a result"},
		{name: "respond content is an array", policy: pdk.Policy{Name: "p", ToolCall: toolCall(pdk.Respond(&abi.CallToolResult{IsError: true}), nil)}, export: abi.ExportToolCall, input: callIn, want: `{"action":"respond","result":{"content":[],"isError":true}}`},
		{name: "bad input", policy: pdk.Policy{Name: "p", ToolCall: toolCall(nil, nil)}, export: abi.ExportToolCall, input: `{"name":1}`, wantErr: "pdk: decoding tool_call input"},
		{name: "panic", policy: pdk.Policy{Name: "p", ToolCall: func(in *abi.ToolCallInput) (*abi.CallDecision, error) { panic("oops") }}, export: abi.ExportToolCall, input: callIn, wantErr: "pdk: panic in mcphost_tool_call: oops"},
		{name: "nil tools list output keeps the input", policy: pdk.Policy{Name: "p", ToolsList: func(*abi.ToolsListInput) (*abi.ToolsListOutput, error) { return nil, nil }},
			export: abi.ExportToolsList, input: `{"caller":{},"tools":[{"name":"a__b","server":"a","tool":"b","extra":1}]}`, want: `{"tools":[{"name":"a__b","server":"a","tool":"b"}]}`},
		{name: "empty tools list is an array", policy: pdk.Policy{Name: "p", ToolsList: func(*abi.ToolsListInput) (*abi.ToolsListOutput, error) { return &abi.ToolsListOutput{}, nil }},
			export: abi.ExportToolsList, input: `{"tools":[{"name":"a__b","server":"a","tool":"b"}]}`, want: `{"tools":[]}`},
		{name: "nil result output keeps the input", policy: pdk.Policy{Name: "p", ToolResult: func(*abi.ToolResultInput) (*abi.ToolResultOutput, error) { return nil, nil }},
			export: abi.ExportToolResult, input: `{"name":"a__b","server":"a","tool":"b","result":{"content":[{"type":"text","text":"hi"}]}}`, want: `{"result":{"content":[{"type":"text","text":"hi"}]}}`},
		{name: "result output needs a result", policy: pdk.Policy{Name: "p", ToolResult: func(*abi.ToolResultInput) (*abi.ToolResultOutput, error) { return &abi.ToolResultOutput{}, nil }},
			export: abi.ExportToolResult, input: `{"result":{"content":[]}}`, wantErr: "returned no result"},
		{name: "describe names the 1.2 hooks", policy: pdk.Policy{Name: "p", List: func(*abi.ListInput) (*abi.ListOutput, error) { return nil, nil },
			Request: func(*abi.RequestInput) (*abi.RequestDecision, error) { return nil, nil }, Message: func(*abi.MessageInput) (*abi.MessageOutput, error) { return nil, nil }},
			export: abi.ExportDescribe, want: `{"abi":"1.5","name":"p","hooks":["list","request","message"]}`},
		{name: "nil list output keeps the input", policy: pdk.Policy{Name: "p", List: func(*abi.ListInput) (*abi.ListOutput, error) { return nil, nil }},
			export: abi.ExportList, input: `{"method":"prompts/list","items":[{"server":"a","name":"a__p","item":{"name":"a__p"}}]}`, want: `{"items":[{"server":"a","name":"a__p","item":{"name":"a__p"}}]}`},
		{name: "empty list output is an array", policy: pdk.Policy{Name: "p", List: func(*abi.ListInput) (*abi.ListOutput, error) { return &abi.ListOutput{}, nil }},
			export: abi.ExportList, input: `{"items":[]}`, want: `{"items":[]}`},
		{name: "nil request decision allows", policy: pdk.Policy{Name: "p", Request: func(*abi.RequestInput) (*abi.RequestDecision, error) { return nil, nil }},
			export: abi.ExportRequest, input: `{"method":"resources/read","server":"a","name":"x://y"}`, want: `{"action":"allow"}`},
		{name: "request decisions are allow or deny", policy: pdk.Policy{Name: "p", Request: func(*abi.RequestInput) (*abi.RequestDecision, error) {
			return &abi.RequestDecision{Action: abi.ActionRewrite}, nil
		}},
			export: abi.ExportRequest, input: `{}`, wantErr: `action "rewrite"; want allow or deny`},
		{name: "nil message output is unchanged", policy: pdk.Policy{Name: "p", Message: func(*abi.MessageInput) (*abi.MessageOutput, error) { return nil, nil }},
			export: abi.ExportMessage, input: `{"method":"notifications/message","message":{"level":"info","data":"x"}}`, want: `{"unchanged":true}`},
		{name: "a changed message", policy: pdk.Policy{Name: "p", Message: func(*abi.MessageInput) (*abi.MessageOutput, error) {
			return &abi.MessageOutput{Message: json.RawMessage(`{"level":"info","data":"y"}`)}, nil
		}}, export: abi.ExportMessage, input: `{"message":{"level":"info","data":"x"}}`, want: `{"message":{"level":"info","data":"y"}}`},
		{name: "a message is an object", policy: pdk.Policy{Name: "p", Message: func(*abi.MessageInput) (*abi.MessageOutput, error) {
			return &abi.MessageOutput{Message: json.RawMessage(`"y"`)}, nil
		}}, export: abi.ExportMessage, input: `{"message":{}}`, wantErr: "not a JSON object"},
		{name: "oversized output", policy: pdk.Policy{Name: "p", ToolCall: toolCall(pdk.Deny(strings.Repeat("x", abi.MaxOutputSize)), nil)}, export: abi.ExportToolCall, input: callIn, wantErr: "over the limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := pdk.NewGuest(tt.policy, nil).Call(tt.export, []byte(tt.input))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %s, %v; want error containing %q", out, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.want {
				t.Errorf("got  %s\nwant %s", out, tt.want)
			}
		})
	}
}

// TestGuestUnchangedResult checks that a nil tool_result output becomes
// {"unchanged":true} only for a host that announced ABI 1.1 or later.
func TestGuestUnchangedResult(t *testing.T) {
	t.Parallel()
	const in = `{"name":"a__b","server":"a","tool":"b","result":{"content":[{"type":"text","text":"hi"}]}}`
	full := `{"result":{"content":[{"type":"text","text":"hi"}]}}`
	policy := func(out *abi.ToolResultOutput) pdk.Policy {
		return pdk.Policy{Name: "p", ToolResult: func(*abi.ToolResultInput) (*abi.ToolResultOutput, error) { return out, nil }}
	}
	changed := &abi.ToolResultOutput{Result: &abi.CallToolResult{Content: []abi.Content{{Type: "text", Text: "bye"}}}}
	for _, tt := range []struct {
		host string // the value of abi.ConfigABI; "" for none
		out  *abi.ToolResultOutput
		want string
	}{
		{"", nil, full},
		{"1.0", nil, full},
		{"1.1", nil, `{"unchanged":true}`},
		{"1.7", nil, `{"unchanged":true}`},
		{"2.0", nil, full},
		{"1.x", nil, full},
		{"1.1", changed, `{"result":{"content":[{"type":"text","text":"bye"}]}}`},
	} {
		config := pdk.ConfigSource(func(key string) (string, bool) {
			if key == abi.ConfigABI && tt.host != "" {
				return tt.host, true
			}
			return "", false
		})
		out, err := pdk.NewGuest(policy(tt.out), config).Call(abi.ExportToolResult, []byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != tt.want {
			t.Errorf("host ABI %q: got %s, want %s", tt.host, out, tt.want)
		}
	}
}

func TestGuestConfigureOnce(t *testing.T) {
	t.Parallel()
	runs := 0
	p := pdk.Policy{
		Name: "p",
		Configure: func(cfg pdk.ConfigSource) error {
			runs++
			if v, _ := cfg.Lookup("mode"); v != "strict" {
				return errors.New("want mode strict")
			}
			return nil
		},
		ToolCall: func(*abi.ToolCallInput) (*abi.CallDecision, error) { return nil, nil },
	}
	cfg := func(key string) (string, bool) { return map[string]string{"mode": "strict"}[key], key == "mode" }
	g := pdk.NewGuest(p, cfg)
	for range 3 {
		if _, err := g.Call(abi.ExportToolCall, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if runs != 1 {
		t.Errorf("Configure ran %d times, want 1", runs)
	}

	g = pdk.NewGuest(p, nil)
	for range 2 {
		if _, err := g.Call(abi.ExportDescribe, nil); err == nil || !strings.Contains(err.Error(), "pdk: configuring p: want mode strict") {
			t.Fatalf("got %v, want the configure error", err)
		}
	}
}

// A StrictConfig policy whose configuration fails still names the keys it
// read when the host asks (abi.ConfigDescribeKeys), and only then; its
// hooks keep failing.
func TestDescribeKeysAfterConfigureFails(t *testing.T) {
	t.Parallel()
	p := pdk.Policy{
		Name: "p",
		Configure: func(cfg pdk.ConfigSource) error {
			if _, ok := cfg.Lookup("tools"); !ok {
				return errors.New("set tools")
			}
			return nil
		},
		ToolCall:     func(*abi.ToolCallInput) (*abi.CallDecision, error) { return nil, nil },
		StrictConfig: true,
	}
	given := map[string]string{"tool": "x", abi.ConfigDescribeKeys: "1"}
	g := pdk.NewGuest(p, func(k string) (string, bool) { v, ok := given[k]; return v, ok })
	out, err := g.Call(abi.ExportDescribe, nil)
	if err != nil {
		t.Fatal(err)
	}
	var d abi.Describe
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatal(err)
	}
	if d.ConfigKeys == nil || !slices.Equal(*d.ConfigKeys, []string{"tools"}) {
		t.Errorf("ConfigKeys = %v, want [tools]", d.ConfigKeys)
	}
	if _, err := g.Call(abi.ExportToolCall, []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "set tools") {
		t.Errorf("tool_call: %v, want the configure error", err)
	}

	delete(given, abi.ConfigDescribeKeys)
	g = pdk.NewGuest(p, func(k string) (string, bool) { v, ok := given[k]; return v, ok })
	if _, err := g.Call(abi.ExportDescribe, nil); err == nil || !strings.Contains(err.Error(), "set tools") {
		t.Errorf("describe without the key: %v, want the configure error", err)
	}
}

func TestConfigSource(t *testing.T) {
	t.Parallel()
	values := map[string]string{
		"s": "text", "b": "true", "badb": "yes", "n": "42", "badn": "4.2",
		"list": `["a","b"]`, "one": "[a-z]*", "nums": `[1]`, "obj": `{"k":"v"}`,
	}
	c := pdk.ConfigSource(func(k string) (string, bool) { v, ok := values[k]; return v, ok })

	if got := c.String("s", "d"); got != "text" {
		t.Errorf("String = %q", got)
	}
	if got := c.String("missing", "d"); got != "d" {
		t.Errorf("String fallback = %q", got)
	}
	if b, err := c.Bool("b", false); !b || err != nil {
		t.Errorf("Bool = %v, %v", b, err)
	}
	if b, err := c.Bool("missing", true); !b || err != nil {
		t.Errorf("Bool fallback = %v, %v", b, err)
	}
	if _, err := c.Bool("badb", false); err == nil {
		t.Error("Bool of yes: no error")
	}
	if n, err := c.Int("n", 0); n != 42 || err != nil {
		t.Errorf("Int = %v, %v", n, err)
	}
	if _, err := c.Int("badn", 0); err == nil {
		t.Error("Int of 4.2: no error")
	}
	if l, err := c.Strings("list"); err != nil || strings.Join(l, ",") != "a,b" {
		t.Errorf("Strings = %q, %v", l, err)
	}
	if l, err := c.Strings("one"); err != nil || len(l) != 1 || l[0] != "[a-z]*" {
		t.Errorf("Strings of one = %q, %v", l, err)
	}
	if l, err := c.Strings("missing"); err != nil || l != nil {
		t.Errorf("Strings of missing = %q, %v", l, err)
	}
	if _, err := c.Strings("nums"); err == nil {
		t.Error("Strings of [1]: no error")
	}
	var obj map[string]string
	if ok, err := c.JSON("obj", &obj); !ok || err != nil || obj["k"] != "v" {
		t.Errorf("JSON = %v, %v, %v", ok, err, obj)
	}
	if ok, err := c.JSON("s", &obj); !ok || err == nil {
		t.Errorf("JSON of a plain string = %v, %v; want an error", ok, err)
	}
	if ok, err := c.JSON("missing", &obj); ok || err != nil {
		t.Errorf("JSON of missing = %v, %v", ok, err)
	}
	var none pdk.ConfigSource
	if _, ok := none.Lookup("s"); ok {
		t.Error("nil ConfigSource has a value")
	}
}

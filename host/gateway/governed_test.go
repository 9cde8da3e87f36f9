package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// methodPolicy is a Go Policy on the methods other than tools: it hides
// and refuses what is named "secret", masks "ghp_" in every message, and
// records the methods and callers it saw. fail makes its message hook fail
// for that method; garble makes it answer a message of the wrong shape.
type methodPolicy struct {
	callerPolicy
	fail, garble string

	mu   sync.Mutex
	seen []string // "hook method transport"
}

func (p *methodPolicy) record(hook, method string, c abi.Caller) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, hook+" "+method+" "+c.Transport)
}

func (p *methodPolicy) saw(entry string) bool { return p.count(entry) > 0 }

func (p *methodPolicy) count(entry string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, s := range p.seen {
		if s == entry {
			n++
		}
	}
	return n
}

func (p *methodPolicy) WantsMethod(string, string) bool { return true }

func (p *methodPolicy) List(_ context.Context, in *abi.ListInput) ([]abi.Item, error) {
	p.record("list", in.Method, in.Caller)
	var out []abi.Item
	for _, it := range in.Items {
		if strings.Contains(it.Name, "secret") {
			continue
		}
		var v map[string]any
		if err := json.Unmarshal(it.Item, &v); err != nil {
			return nil, err
		}
		// The description is the policy's to change; what routes is not.
		v["description"] = "seen by policy"
		v["uri"], v["uriTemplate"], v["name"] = "evil://x", "evil://{x}", "evil"
		it.Item, _ = json.Marshal(v)
		out = append(out, it)
	}
	return out, nil
}

func (p *methodPolicy) Request(_ context.Context, in *abi.RequestInput) (*abi.RequestDecision, error) {
	p.record("request", in.Method, in.Caller)
	if strings.Contains(in.Name, "secret") || in.Method == abi.MethodRootsList {
		return &abi.RequestDecision{Action: abi.ActionDeny, Reason: "no secrets here"}, nil
	}
	return &abi.RequestDecision{Action: abi.ActionAllow}, nil
}

func (p *methodPolicy) Message(_ context.Context, in *abi.MessageInput) (json.RawMessage, error) {
	p.record("message", in.Method, in.Caller)
	switch in.Method {
	case p.fail:
		return nil, errors.New("policy broke")
	case p.garble:
		return json.RawMessage(`{"contents":5,"messages":5,"level":5,"progress":"x","message":5}`), nil
	}
	if !bytes.Contains(in.Message, []byte("ghp_")) {
		return in.Message, nil
	}
	return bytes.ReplaceAll(in.Message, []byte("ghp_"), []byte("MASKED_")), nil
}

const testSecret = "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3sXYZ"

// secretsHost serves the test upstream with -secrets behind p.
func secretsHost(t *testing.T, p Policy) *Host {
	up := stdioServer("s", "-secrets")
	up.Env = map[string]string{"HOSTILE_SECRET": testSecret}
	return startHost(t, Config{Servers: []upstream.ServerConfig{up}}, &Options{Policy: p})
}

func wantRefused(t *testing.T, what string, err error, code int64) {
	t.Helper()
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != code {
		t.Errorf("%s: err = %v, want JSON-RPC code %d", what, err, code)
	}
}

func TestListsGoverned(t *testing.T) {
	p := &methodPolicy{}
	cs := connectHTTP(t, secretsHost(t, p), nil)
	ctx := context.Background()
	res, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Resources) != 1 || res.Resources[0].URI != "public://readme" || res.Resources[0].Description != "seen by policy" {
		b, _ := json.Marshal(res.Resources)
		t.Fatalf("resources/list = %s, want public://readme alone, its URI kept and its description changed", b)
	}
	ts, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts.ResourceTemplates) != 0 {
		t.Fatalf("resources/templates/list shows %s", ts.ResourceTemplates[0].URITemplate)
	}
	ps, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.Prompts) != 0 {
		t.Fatalf("prompts/list shows %s", ps.Prompts[0].Name)
	}
	for _, m := range []string{abi.MethodResourcesList, abi.MethodResourceTemplatesList, abi.MethodPromptsList} {
		if !p.saw("list " + m + " http") {
			t.Errorf("the list hook did not see %s over http: %v", m, p.seen)
		}
	}
	// Listing again is answered from the cache: the hook ran once.
	if _, err := cs.ListResources(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if n := p.count("list " + abi.MethodResourcesList + " http"); n != 1 {
		t.Errorf("the list hook ran %d times for two listings by one client, want 1", n)
	}
}

func TestRequestsGoverned(t *testing.T) {
	p := &methodPolicy{}
	cs := connectHTTP(t, secretsHost(t, p), &mcp.ClientOptions{})
	ctx := context.Background()
	_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "secret://note"})
	wantRefused(t, "resources/read", err, CodePolicyDenied)
	if err == nil || !strings.Contains(err.Error(), "resources/read refused: no secrets here") {
		t.Errorf("the refusal does not say why: %v", err)
	}
	_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "s__secret_prompt"})
	wantRefused(t, "prompts/get", err, CodePolicyDenied)
	_, err = cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "secret://{name}"},
		Argument: mcp.CompleteParamsArgument{Name: "name", Value: "x"}})
	wantRefused(t, "completion/complete", err, CodePolicyDenied)
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "public://readme"}); err != nil {
		t.Fatalf("an allowed read: %v", err)
	}

	// An upstream's roots/list is refused before the client is asked.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__ask_roots", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "roots/list refused: no secrets here") {
		t.Fatalf("s__ask_roots = %+v, want the refusal", res.Content[0])
	}
}

func TestMessagesGoverned(t *testing.T) {
	p := &methodPolicy{}
	var rec testproc.Recorder
	cs := connectHTTP(t, secretsHost(t, maskOnly{p}), rec.Options())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "secret://note"})
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "s__secret_prompt"})
	if err != nil {
		t.Fatal(err)
	}
	rec.Add(read)
	rec.Add(prompt)
	for _, call := range []*mcp.CallToolParams{
		{Name: "s__log"}, {Name: "s__progress_message", Meta: mcp.Meta{"progressToken": 7}},
		{Name: "s__elicit"}, {Name: "s__sample", Arguments: map[string]any{"text": "about " + testSecret}},
	} {
		if call.Arguments == nil {
			call.Arguments = map[string]any{}
		}
		if res, err := cs.CallTool(ctx, call); err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", call.Name, err, res)
		}
	}
	all := rec.All()
	if strings.Contains(all, testSecret) {
		t.Fatalf("the client was sent the secret:\n%s", all)
	}
	if n := strings.Count(all, "MASKED_"); n != 6 {
		t.Fatalf("%d masked secrets, want 6 (resource, prompt, log, progress, elicitation, sampling):\n%s", n, all)
	}
	if !strings.Contains(all, `"progressToken":7`) {
		t.Errorf("the progress notification lost its token:\n%s", all)
	}
	for _, m := range []string{abi.MethodLoggingMessage, abi.MethodProgress} {
		if !p.saw("message " + m + " http") {
			t.Errorf("the message hook did not see %s for the http client: %v", m, p.seen)
		}
	}
}

// maskOnly is a methodPolicy that allows every request.
type maskOnly struct{ *methodPolicy }

func (maskOnly) Request(context.Context, *abi.RequestInput) (*abi.RequestDecision, error) {
	return &abi.RequestDecision{Action: abi.ActionAllow}, nil
}

func TestMessageFailuresWithhold(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Run("a failing hook withholds a result", func(t *testing.T) {
		cs := connectHTTP(t, secretsHost(t, maskOnly{&methodPolicy{fail: abi.MethodResourcesRead}}), nil)
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "secret://note"})
		wantRefused(t, "resources/read", err, CodePolicyDenied)
	})
	t.Run("a message of the wrong shape withholds a result", func(t *testing.T) {
		cs := connectHTTP(t, secretsHost(t, maskOnly{&methodPolicy{garble: abi.MethodPromptsGet}}), nil)
		_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "s__secret_prompt"})
		wantRefused(t, "prompts/get", err, jsonrpc.CodeInternalError)
	})
	t.Run("a failing hook drops a notification", func(t *testing.T) {
		var rec testproc.Recorder
		cs := connectHTTP(t, secretsHost(t, maskOnly{&methodPolicy{fail: abi.MethodLoggingMessage}}), rec.Options())
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__log", Arguments: map[string]any{"text": "hello"}}); err != nil {
			t.Fatal(err)
		}
		if got := rec.All(); got != "" {
			t.Fatalf("the client got %s", got)
		}
	})
	t.Run("a failing hook refuses an upstream's elicitation", func(t *testing.T) {
		var rec testproc.Recorder
		cs := connectHTTP(t, secretsHost(t, maskOnly{&methodPolicy{fail: abi.MethodElicit}}), rec.Options())
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__elicit", Arguments: map[string]any{}})
		if err != nil || !res.IsError {
			t.Fatalf("s__elicit = %+v, %v; want an error result", res, err)
		}
		if got := rec.All(); got != "" {
			t.Fatalf("the client got %s", got)
		}
	})
}

// planPolicy hides s__crash, as plan mode would, and refuses calls of it
// with a reason; for the client "quiet" it asks to stay invisible.
type planPolicy struct{ callerPolicy }

func (planPolicy) ToolsList(_ context.Context, in *abi.ToolsListInput) ([]abi.Tool, error) {
	var out []abi.Tool
	for _, t := range in.Tools {
		if t.Tool != "crash" {
			out = append(out, t)
		}
	}
	return out, nil
}

func (planPolicy) ToolCall(_ context.Context, in *abi.ToolCallInput) (*abi.CallDecision, error) {
	if in.Tool != "crash" {
		return &abi.CallDecision{Action: abi.ActionAllow}, nil
	}
	return &abi.CallDecision{Action: abi.ActionDeny, Reason: "not available in plan mode", Hidden: in.Caller.ClientName == "quiet"}, nil
}

func TestHiddenToolRefusalSaysWhy(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("s")}}, &Options{Policy: planPolicy{}})
	ctx := context.Background()
	pid := func() string {
		res, err := h.CallTool(ctx, abi.Caller{}, "s__pid", nil)
		if err != nil || res.IsError {
			t.Fatalf("s__pid: %v %+v", err, res)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	before := pid()
	res, err := h.CallTool(ctx, abi.Caller{ClientName: "claude"}, "s__crash", nil)
	if err != nil {
		t.Fatalf("a hidden tool's call: %v, want an error result", err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || text != "call to s__crash denied: not available in plan mode" {
		t.Fatalf("got %q (isError %v)", text, res.IsError)
	}
	for _, tt := range []struct{ client, name string }{{"quiet", "s__crash"}, {"claude", "s__crahs"}} {
		if _, err := h.CallTool(ctx, abi.Caller{ClientName: tt.client}, tt.name, nil); !errors.Is(err, ErrUnknownTool) {
			t.Errorf("%s calling %s: err = %v, want ErrUnknownTool", tt.client, tt.name, err)
		}
	}
	// The upstream was never called: crash would have ended its process
	// before answering, and the next call would meet another.
	if after := pid(); after != before {
		t.Fatalf("the upstream's pid went from %s to %s: the hidden tool ran", before, after)
	}
}

// TestFeaturePrintCoversServers: listings are cached by the snapshot's
// print, and policies judge entries by server, so an entry that moves to
// another server with the same JSON must change the print.
func TestFeaturePrintCoversServers(t *testing.T) {
	res := []*mcp.Resource{{URI: "file:///x", Name: "x"}}
	prompts := []*mcp.Prompt{{Name: "p"}}
	cfg := catalog.ToolsConfig{Separator: "__", MaxNameLength: 64, Prefix: catalog.PrefixNever}
	onA := catalog.BuildFeatures(cfg, catalog.ResourcesConfig{}, []upstream.ServerFeatures{{Server: "a", Resources: res, Prompts: prompts}, {Server: "b"}})
	onB := catalog.BuildFeatures(cfg, catalog.ResourcesConfig{}, []upstream.ServerFeatures{{Server: "a"}, {Server: "b", Resources: res, Prompts: prompts}})
	if onA.ResPrint == onB.ResPrint {
		t.Error("a resource that moved server kept the print")
	}
	if onA.PromptPrint == onB.PromptPrint {
		t.Error("a prompt that moved server kept the print")
	}
}

package security

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// Policies govern every method, not only tools (issue 13 §1): before ABI
// 1.2, builtin:redact masked a secret in a tool result while the same
// secret came back whole through resources/read, prompts/get, log and
// progress messages, elicitation and sampling; and builtin:deny hid tools
// but not the resources and prompts of the same server.

const secretsUpstream = `
server "up" {
  command = "UPSTREAM"
  args    = ["-secrets"]
  env     = { HOSTILE_SECRET = "` + ghpSecret + `" }
}
`

func TestRedactOnEveryMethod(t *testing.T) {
	cfg := writeConfig(t, "", secretsUpstream+`
plugin "redact" {
  source = "builtin:redact"
}
`)
	s := startServer(t, cfg)
	var got testproc.Recorder
	cs := connect(t, s.URL, got.Options())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}

	for _, uri := range []string{"secret://note", "secret://other"} {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("reading %s: %v", uri, err)
		}
		b, _ := json.Marshal(res)
		assertNoSecret(t, "resources/read "+uri, string(b))
		if !strings.Contains(string(b), "[REDACTED:github_token]") {
			t.Errorf("resources/read %s: no mask where the secret was: %s", uri, b)
		}
	}
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "up__secret_prompt"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(pr)
	assertNoSecret(t, "prompts/get", string(b))

	for _, call := range []*mcp.CallToolParams{
		{Name: "up__log", Arguments: map[string]any{}},
		{Name: "up__progress_message", Arguments: map[string]any{}, Meta: mcp.Meta{"progressToken": "p1"}},
		{Name: "up__elicit", Arguments: map[string]any{}},
		{Name: "up__sample", Arguments: map[string]any{"text": "summarise " + ghpSecret}},
	} {
		res, err := cs.CallTool(ctx, call)
		if err != nil || res.IsError {
			b, _ := json.Marshal(res)
			t.Fatalf("%s: %v %s", call.Name, err, b)
		}
	}
	all := got.All()
	for _, want := range []string{`"level":"info"`, `"progressToken":"p1"`, `"message":"paste `, `"summarise `} {
		if !strings.Contains(all, want) {
			t.Errorf("the client was not sent %s; it got:\n%s", want, all)
		}
	}
	assertNoSecret(t, "log, progress, elicitation and sampling", all)
}

func TestDenyOnResourcesAndPrompts(t *testing.T) {
	cfg := writeConfig(t, "", secretsUpstream+`
plugin "no-secrets" {
  source = "builtin:deny"
  config = { resources = ["secret://*"], prompts = ["up__secret_*"], methods = ["sampling/*"] }
}
`)
	s := startServer(t, cfg)
	var got testproc.Recorder
	cs := connect(t, s.URL, got.Options())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	res, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	if strings.Join(uris, ",") != "public://readme" {
		t.Errorf("resources/list = %v, want only public://readme", uris)
	}
	tmpls, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tmpls.ResourceTemplates) != 0 {
		t.Errorf("resources/templates/list shows %v", tmpls.ResourceTemplates[0].URITemplate)
	}
	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(prompts.Prompts) != 0 {
		t.Errorf("prompts/list shows %s", prompts.Prompts[0].Name)
	}

	refused := func(what string, err error) {
		t.Helper()
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != gateway.CodePolicyDenied || !strings.Contains(werr.Message, `policy "no-secrets"`) {
			t.Errorf("%s: err = %v, want code %d naming the policy", what, err, gateway.CodePolicyDenied)
		}
	}
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "secret://note"})
	refused("resources/read secret://note", err)
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "secret://other"})
	refused("resources/read through the template", err)
	_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "up__secret_prompt"})
	refused("prompts/get", err)
	err = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "secret://note"})
	refused("resources/subscribe", err)
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "public://readme"}); err != nil {
		t.Errorf("reading an allowed resource: %v", err)
	}

	// The upstream's sampling request is refused before the client sees it.
	call, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__sample", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(call)
	if !call.IsError || !strings.Contains(string(b), "refused") {
		t.Errorf("up__sample = %s, want an error saying the sampling request was refused", b)
	}
	if strings.Contains(got.All(), `"hi"`) {
		t.Errorf("the client was sent the refused sampling request: %s", got.All())
	}
}

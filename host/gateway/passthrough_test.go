package gateway

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

func everythingServer(name string) upstream.ServerConfig {
	return upstream.ServerConfig{Name: name, Transport: upstream.TransportStdio, Command: everythingBin}
}

// Prompts, resources, templates, completion, subscriptions and logging pass
// through from the go-sdk conformance server, next to a server without them.
func TestPromptsResourcesCompletionLogging(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("local"), everythingServer("every")}}, nil)
	var (
		mu      sync.Mutex
		logs    []string
		updated = make(chan string, 10)
		changed = make(chan struct{}, 10)
	)
	cs := connectHTTP(t, h, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			mu.Lock()
			defer mu.Unlock()
			logs = append(logs, r.Params.Data.(string))
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			updated <- r.Params.URI
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { changed <- struct{}{} },
	})
	ctx := context.Background()

	caps := cs.InitializeResult().Capabilities
	if caps.Prompts == nil || caps.Resources == nil || !caps.Resources.Subscribe || caps.Completions == nil || caps.Logging == nil || caps.Tools == nil {
		t.Fatalf("capabilities are not the union of the upstreams': %+v", caps)
	}

	// Prompts are named like tools.
	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range prompts.Prompts {
		names = append(names, p.Name)
	}
	if !strings.Contains(strings.Join(names, " "), "every__test_prompt_with_arguments") || strings.Contains(strings.Join(names, " "), "_mcphost") {
		t.Fatalf("prompts = %v", names)
	}
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "every__test_prompt_with_arguments", Arguments: map[string]string{"arg1": "x", "arg2": "y"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := pr.Messages[0].Content.(*mcp.TextContent).Text; !strings.Contains(got, "arg1='x'") {
		t.Errorf("prompt text = %q", got)
	}
	var werr *jsonrpc.Error
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_simple_prompt"}); !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("unprefixed prompt name: err = %v, want invalid params", err)
	}

	// Resources keep their URIs.
	res, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	uris := map[string]bool{}
	for _, r := range res.Resources {
		uris[r.URI] = true
	}
	if !uris["test://static-text"] || uris["mcphost:resources"] {
		t.Fatalf("resources = %v", uris)
	}
	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"})
	if err != nil || !strings.Contains(read.Contents[0].Text, "static text resource") {
		t.Fatalf("read static-text: %v %+v", err, read)
	}
	tmpls, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tmpls.ResourceTemplates) != 1 || tmpls.ResourceTemplates[0].URITemplate != "test://template/{id}/data" {
		t.Fatalf("templates: %v %+v", err, tmpls)
	}
	read, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://template/42/data"})
	if err != nil || !strings.Contains(read.Contents[0].Text, `"id": "42"`) {
		t.Fatalf("read through template: %v %+v", err, read)
	}

	// Completion routes by the prompt or template it names.
	for _, ref := range []*mcp.CompleteReference{
		{Type: "ref/prompt", Name: "every__test_prompt_with_arguments"},
		{Type: "ref/resource", URI: "test://template/{id}/data"},
	} {
		if _, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: "a"}}); err != nil {
			t.Errorf("complete %+v: %v", ref, err)
		}
	}

	// Logging: the level goes upstream, the messages come back.
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if got, isErr := callText(t, cs, "every__test_tool_with_logging", nil); isErr {
		t.Fatalf("logging tool: %s", got)
	}
	testproc.WaitFor(t, "three log messages", 5*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(logs) == 3
	})

	// Subscriptions: the everything server updates its watched resource every 3s.
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Fatal(err)
	}
	select {
	case uri := <-updated:
		if uri != "test://watched-resource" {
			t.Errorf("updated %q", uri)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("no resource update reached the subscriber")
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Fatal(err)
	}

	// list_changed for prompts reaches the client, and the new prompt is listed.
	callText(t, cs, "every__test_trigger_prompt_change", nil)
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no prompts/list_changed reached the client")
	}
	testproc.WaitFor(t, "the new prompt", 5*time.Second, func() bool {
		prompts, err := cs.ListPrompts(ctx, nil)
		if err != nil {
			return false
		}
		for _, p := range prompts.Prompts {
			if p.Name == "every____transient_prompt_for_list_changed" {
				return true
			}
		}
		return false
	})
}

// With prefix = "never", prompt names pass through as they are.
func TestPromptNamesPassThrough(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{everythingServer("every")}, Tools: catalog.ToolsConfig{Prefix: catalog.PrefixNever}}, nil)
	cs := connectHTTP(t, h, nil)
	if _, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "test_simple_prompt"}); err != nil {
		t.Fatal(err)
	}
}

func TestResourceConflicts(t *testing.T) {
	ups := []upstream.ServerFeatures{
		{Server: "a", Resources: []*mcp.Resource{{URI: "x://same"}, {URI: "x://a"}}, Templates: []*mcp.ResourceTemplate{{URITemplate: "t://{id}"}}},
		{Server: "b", Resources: []*mcp.Resource{{URI: "x://same"}, {URI: "x://b"}}, Templates: []*mcp.ResourceTemplate{{URITemplate: "t://{id}/more"}, {URITemplate: "u://{id}"}}},
	}
	first := catalog.BuildFeatures(catalog.ToolsConfig{}, catalog.ResourcesConfig{Conflict: catalog.ResourceConflictFirst}, ups)
	for uri, want := range map[string]string{"x://same": "a", "x://a": "a", "x://b": "b", "t://1": "a", "u://1": "b"} {
		if got, err := first.ResourceServer(uri); err != nil || got != want {
			t.Errorf("first: %s -> %q, %v; want %q", uri, got, err, want)
		}
	}
	if len(first.Resources) != 3 || len(first.Issues) != 1 {
		t.Errorf("first: resources %d, issues %v", len(first.Resources), first.Issues)
	}
	if _, err := first.ResourceServer("nope://x"); err == nil {
		t.Error("an unknown URI with two resource servers must not route")
	}

	strict := catalog.BuildFeatures(catalog.ToolsConfig{}, catalog.ResourcesConfig{Conflict: catalog.ResourceConflictError}, ups)
	if _, err := strict.ResourceServer("x://same"); err == nil || !strings.Contains(err.Error(), `"a"`) || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("error: x://same -> %v, want an error naming a and b", err)
	}
	// "t://1/more" matches both a's t://{id} ({id} takes no '/': it does not) and b's.
	if got, err := strict.ResourceServer("x://b"); err != nil || got != "b" {
		t.Errorf("error: x://b -> %q, %v", got, err)
	}
	if len(strict.Resources) != 2 {
		t.Errorf("error: resources = %d, want the conflicting one hidden", len(strict.Resources))
	}
}

// FuzzResourceRoute feeds URIs from clients and URI templates from servers
// (both outside input) to the resource table.
func FuzzResourceRoute(f *testing.F) {
	f.Add("test://template/{id}/data", "test://template/42/data")
	f.Add("{+path}", "/etc/passwd")
	f.Add("x://{a}{b}{c}", "x://")
	f.Add("{", "}")
	f.Fuzz(func(t *testing.T, tmpl, uri string) {
		ups := []upstream.ServerFeatures{
			{Server: "a", Resources: []*mcp.Resource{{URI: uri}}, Templates: []*mcp.ResourceTemplate{{URITemplate: tmpl}}},
			{Server: "b", Templates: []*mcp.ResourceTemplate{{URITemplate: tmpl}, {URITemplate: uri}}},
		}
		for _, mode := range []string{catalog.ResourceConflictFirst, catalog.ResourceConflictError} {
			f := catalog.BuildFeatures(catalog.ToolsConfig{}, catalog.ResourcesConfig{Conflict: mode}, ups)
			s1, err1 := f.ResourceServer(uri)
			s2, err2 := f.ResourceServer(uri)
			if s1 != s2 || (err1 == nil) != (err2 == nil) {
				t.Fatalf("routing %q is not deterministic", uri)
			}
			if err1 == nil && s1 != "a" && s1 != "b" {
				t.Fatalf("routed to %q", s1)
			}
		}
	})
}

// FuzzDecodeProgress feeds progress notification params from servers.
func FuzzDecodeProgress(f *testing.F) {
	f.Add([]byte(`{"progressToken":"mcphost-1","progress":1,"total":3}`))
	f.Add([]byte(`{"progressToken":7,"progress":0.5,"message":"x"}`))
	f.Add([]byte(`{"progress":1}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := upstream.DecodeProgress(b)
		if err == nil && p.ProgressToken == nil {
			t.Fatal("accepted a notification without a token")
		}
	})
}

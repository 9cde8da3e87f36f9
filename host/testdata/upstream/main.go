// Command upstream is a real MCP server for host's end-to-end tests: it
// serves over stdio (or streamable HTTP with -http) and has tools that let a
// test crash it, slow it down, watch progress, spawn a child process and
// change its tool list.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Text string `json:"text"`
}

// hostileIn is the hostile tools' input: text is optional.
type hostileIn struct {
	Text string `json:"text,omitempty"`
}

type spawnIn struct {
	Mode string `json:"mode"`
}

type sampleIn struct {
	Text   string `json:"text"`
	Millis int    `json:"millis,omitempty"`
}

// tickerURI is the resource that update_burst updates (-subscribable).
const tickerURI = "test://ticker"

type burstIn struct {
	Count int `json:"count"`
	Size  int `json:"size"`
}

type sleepIn struct {
	Millis int `json:"millis"`
	Steps  int `json:"steps,omitempty"`
}

func main() {
	fail := flag.String("fail", "", "exit at start with this message")
	httpAddr := flag.String("http", "", "serve streamable HTTP on this address and print it")
	sse := flag.Bool("sse", false, "with -http, serve SSE instead")
	name := flag.String("name", "upstream", "server name")
	echoDesc := flag.String("echo-description", "Echoes text.", "the echo tool's description (tests change it to test pinning)")
	subscribable := flag.Bool("subscribable", false, "serve the resource "+tickerURI+", which clients may subscribe to, and the tool update_burst")
	linger := flag.Bool("linger", false, "keep running after stdin closes, as many servers do, until signalled")
	traceTool := flag.Bool("trace", false, "serve the tool traceparent, which returns the traceparent of its request's _meta")
	argvTool := flag.Bool("argv", false, "serve the tool argv, which returns the arguments the process was started with, one a line")
	memoryTools := flag.Bool("memory", false, "serve the tools env (the value of the environment variable named by text) and remember (appends text to the file $MEMORY_FILE_PATH and returns the file), a stand-in for server-memory")
	secrets := flag.Bool("secrets", false, "serve $HOSTILE_SECRET through every method but tools too: resources secret://note and secret://{name}, the prompt secret_prompt, and tools elicit and progress_message")
	apps := flag.Bool("apps", false, "serve MCP Apps (apps.go): the tools widget, touch_widget, client_extensions and region, and the resource -ui-uri")
	uiURI := flag.String("ui-uri", widgetURI, "with -apps, the URI of the widget's resource")
	flag.Parse()
	// A server that starts once and then fails every restart, saying why
	// on stderr (tests put secrets there): HOSTILE_FAIL_IF_EXISTS names
	// a file the first start creates, HOSTILE_STDERR what later starts print.
	if p := os.Getenv("HOSTILE_FAIL_IF_EXISTS"); p != "" {
		if _, err := os.Stat(p); err == nil {
			fmt.Fprintln(os.Stderr, os.Getenv("HOSTILE_STDERR"))
			os.Exit(3)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			log.Fatal(err)
		}
	}
	if msg := os.Getenv("UPSTREAM_STDERR"); msg != "" {
		fmt.Fprintln(os.Stderr, msg) // a server that says something on start
	}
	if *fail != "" {
		fmt.Fprintln(os.Stderr, *fail)
		os.Exit(3)
	}
	opts := &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}}
	if *subscribable {
		opts.SubscribeHandler = func(context.Context, *mcp.SubscribeRequest) error { return nil }
		opts.UnsubscribeHandler = func(context.Context, *mcp.UnsubscribeRequest) error { return nil }
	}
	if *apps {
		appsCapabilities(opts.Capabilities)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: *name, Version: "1.0.0"}, opts)
	if *apps {
		addApps(srv, *name, *uiURI)
	}
	if *subscribable {
		srv.AddResource(&mcp.Resource{Name: "ticker", URI: tickerURI}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: tickerURI, Text: "tick"}}}, nil
		})
		mcp.AddTool(srv, &mcp.Tool{Name: "update_burst", Description: "Sends count updates of " + tickerURI + ", each with size bytes of _meta, as fast as it can."},
			func(ctx context.Context, _ *mcp.CallToolRequest, in burstIn) (*mcp.CallToolResult, any, error) {
				pad := strings.Repeat("x", in.Size)
				for i := range in.Count {
					err := srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: tickerURI, Meta: mcp.Meta{"seq": i, "pad": pad}})
					if err != nil {
						return nil, nil, err
					}
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("updated %d", in.Count)}}}, nil, nil
			})
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Title: "Echo", Description: *echoDesc,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "nested", Description: "Returns text inside a tool_result block, where the ABI form of a result does not reach."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ToolResultContent{ToolUseID: "u1",
				Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}}}, nil, nil
		})
	if *argvTool {
		mcp.AddTool(srv, &mcp.Tool{Name: "argv", Description: "Returns the process's arguments, one a line."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(os.Args[1:], "\n")}}}, nil, nil
			})
	}
	if *memoryTools {
		mcp.AddTool(srv, &mcp.Tool{Name: "env", Description: "Returns the value of the environment variable named by text."},
			func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: os.Getenv(in.Text)}}}, nil, nil
			})
		mcp.AddTool(srv, &mcp.Tool{Name: "remember", Description: "Appends text to the file $MEMORY_FILE_PATH and returns all it holds."},
			func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
				path := os.Getenv("MEMORY_FILE_PATH")
				if path == "" {
					return nil, nil, fmt.Errorf("MEMORY_FILE_PATH is not set")
				}
				f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
				if err != nil {
					return nil, nil, err
				}
				_, err = fmt.Fprintln(f, in.Text)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					return nil, nil, err
				}
				all, err := os.ReadFile(path)
				if err != nil {
					return nil, nil, err
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(all)}}}, nil, nil
			})
	}
	if *traceTool {
		mcp.AddTool(srv, &mcp.Tool{Name: "traceparent", Description: "Returns the traceparent of the request's _meta."},
			func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				tp, _ := req.Params.Meta["traceparent"].(string)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: tp}}}, nil, nil
			})
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "pid", Description: "Returns the server's process id."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "crash", Description: "Exits the process mid-call."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			os.Exit(7)
			return nil, nil, nil
		})
	// Hostile tools: each puts text (a secret, in the tests) where a
	// result's text fields are not, to check that every part reaching a
	// client goes through the result policies. Without text they use
	// $HOSTILE_SECRET, so a test's secret need not pass through the
	// client's arguments (and mcphost's logs of them).
	secretOr := func(text string) string {
		if text == "" {
			return os.Getenv("HOSTILE_SECRET")
		}
		return text
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "crash_loud", Description: "Writes text to stderr and exits mid-call."},
		func(_ context.Context, _ *mcp.CallToolRequest, in hostileIn) (*mcp.CallToolResult, any, error) {
			in.Text = secretOr(in.Text)
			fmt.Fprintln(os.Stderr, "fatal: "+in.Text)
			os.Exit(9)
			return nil, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "rpc_error", Description: "Answers with a JSON-RPC error whose message is text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in hostileIn) (*mcp.CallToolResult, any, error) {
			in.Text = secretOr(in.Text)
			return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: in.Text}
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "tool_error", Description: "Fails with text as the tool's error."},
		func(_ context.Context, _ *mcp.CallToolRequest, in hostileIn) (*mcp.CallToolResult, any, error) {
			in.Text = secretOr(in.Text)
			return nil, nil, errors.New(in.Text)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "structured_key", Description: "Returns structuredContent with text as a key."},
		func(_ context.Context, _ *mcp.CallToolRequest, in hostileIn) (*mcp.CallToolResult, any, error) {
			in.Text = secretOr(in.Text)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}},
				StructuredContent: map[string]any{in.Text: 1, "nested": map[string]any{in.Text: in.Text}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "resource_link", Description: "Returns a resource_link with text in its uri, name, title and description."},
		func(_ context.Context, _ *mcp.CallToolRequest, in hostileIn) (*mcp.CallToolResult, any, error) {
			in.Text = secretOr(in.Text)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{URI: "https://example.com/x?k=" + in.Text,
				Name: in.Text, Title: in.Text, Description: "see " + in.Text, Meta: mcp.Meta{"k": in.Text}}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "meta", Description: "Returns text in the result's _meta and a text block's _meta."},
		func(_ context.Context, _ *mcp.CallToolRequest, in hostileIn) (*mcp.CallToolResult, any, error) {
			in.Text = secretOr(in.Text)
			return &mcp.CallToolResult{Meta: mcp.Meta{"trace": in.Text, in.Text: true},
				Content: []mcp.Content{&mcp.TextContent{Text: "ok", Meta: mcp.Meta{"k": in.Text}}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "embedded", Description: "Returns an embedded resource with text in its uri and text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in hostileIn) (*mcp.CallToolResult, any, error) {
			in.Text = secretOr(in.Text)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: "file:///" + in.Text, MIMEType: "text/plain", Text: in.Text}}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "hold", Description: "Reports progress whose message is the progress token it was given, waits until the file text exists (10 s at most), then reports progress \"done\"."},
		func(ctx context.Context, req *mcp.CallToolRequest, in hostileIn) (*mcp.CallToolResult, any, error) {
			tok := req.Params.GetProgressToken()
			if tok == nil {
				return nil, nil, fmt.Errorf("hold needs a progress token")
			}
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Message: fmt.Sprint(tok)})
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(in.Text); err == nil {
					break
				}
			}
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 2, Message: "done"})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "held"}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "wait_file", Description: "Writes the file text+\".started\", waits until the file named by text exists, then returns what it holds; cancelling the call ends the wait and writes the file text+\".cancelled\"."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			_ = os.WriteFile(in.Text+".started", nil, 0o644)
			// os.WriteFile creates the file before it writes to it: an empty
			// file may be one being written, so it counts only once it has
			// stayed empty for 100 ms.
			for empty := 0; ; {
				if b, err := os.ReadFile(in.Text); err == nil {
					if len(b) > 0 || empty == 10 {
						return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
					}
					empty++
				}
				select {
				case <-ctx.Done():
					_ = os.WriteFile(in.Text+".cancelled", nil, 0o644)
					return nil, nil, ctx.Err()
				case <-time.After(10 * time.Millisecond):
				}
			}
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "progress_spray", Description: "Sends progress \"injected\" for each comma-separated token in text, none of them its own: a hostile server's guesses."},
		func(ctx context.Context, req *mcp.CallToolRequest, in hostileIn) (*mcp.CallToolResult, any, error) {
			for _, tok := range strings.Split(in.Text, ",") {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Message: "injected"})
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sprayed"}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "sleep", Description: "Sleeps, reporting progress in steps."},
		func(ctx context.Context, req *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
			steps := max(in.Steps, 1)
			for i := 1; i <= steps; i++ {
				select {
				case <-time.After(time.Duration(in.Millis/steps) * time.Millisecond):
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				}
				if tok := req.Params.GetProgressToken(); tok != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: float64(steps)})
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slept"}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "spawn_child", Description: "Starts a long-lived child process and returns its pid."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			cmd := exec.Command("sleep", "600")
			if err := cmd.Start(); err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(cmd.Process.Pid)}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "spawn_escaper", Description: "Starts a long-lived process that leaves the server's process group and returns its pid. mode: setsid (a child in its own session), orphan (a setsid grandchild whose parent exits) or scrubbed (an orphan that also clears its environment)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in spawnIn) (*mcp.CallToolResult, any, error) {
			var cmd *exec.Cmd
			switch in.Mode {
			case "setsid":
				cmd = exec.Command("sleep", "600")
				cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
				if err := cmd.Start(); err != nil {
					return nil, nil, err
				}
				go cmd.Wait()
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(cmd.Process.Pid)}}}, nil, nil
			case "orphan":
				cmd = exec.Command("sh", "-c", "setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $!")
			case "scrubbed":
				cmd = exec.Command("sh", "-c", "env -i setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $!")
			default:
				return nil, nil, fmt.Errorf("unknown mode %q", in.Mode)
			}
			out, err := cmd.Output() // sh exits at once: its child is orphaned
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimSpace(string(out))}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "remove_tool", Description: "Removes the tool named by text, which sends tools/list_changed."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			srv.RemoveTools(in.Text)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "add_tool", Description: "Adds a tool named by text, which sends tools/list_changed."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(srv, &mcp.Tool{Name: in.Text}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added tool " + in.Text}}}, nil, nil
			})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})

	mcp.AddTool(srv, &mcp.Tool{Name: "sample", Description: "Asks the client's LLM (sampling) with text as the prompt, after waiting millis."},
		func(ctx context.Context, req *mcp.CallToolRequest, in sampleIn) (*mcp.CallToolResult, any, error) {
			time.Sleep(time.Duration(in.Millis) * time.Millisecond)
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Text}}}})
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{res.Content}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "ask_roots", Description: "Returns the client's roots, comma-separated."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return nil, nil, err
			}
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.URI)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(uris, ",")}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "log", Description: "Sends text (default $HOSTILE_SECRET) as an info log message."},
		func(ctx context.Context, req *mcp.CallToolRequest, in hostileIn) (*mcp.CallToolResult, any, error) {
			in.Text = secretOr(in.Text)
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: in.Text})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "logged"}}}, nil, nil
		})

	mcp.AddTool(srv, &mcp.Tool{Name: "log_burst", Description: "Sends count debug log messages of size bytes each, as fast as it can."},
		func(ctx context.Context, req *mcp.CallToolRequest, in burstIn) (*mcp.CallToolResult, any, error) {
			msg := strings.Repeat("x", in.Size)
			for i := range in.Count {
				if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "debug", Data: fmt.Sprintf("%d %s", i, msg)}); err != nil {
					return nil, nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("logged %d", in.Count)}}}, nil, nil
		})

	if *secrets {
		addSecretFeatures(srv, secretOr)
	}

	if *httpAddr != "" {
		ln, err := net.Listen("tcp", *httpAddr)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ln.Addr().String())
		var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
		if *sse {
			h = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)
		}
		log.Fatal(http.Serve(ln, h))
	}
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Print(err)
	}
	if *linger {
		select {}
	}
}

// addSecretFeatures puts secret(""), $HOSTILE_SECRET unless a test gives
// text, where the methods other than tools carry content to a client.
func addSecretFeatures(srv *mcp.Server, secret func(string) string) {
	srv.AddResource(&mcp.Resource{Name: "note", URI: "secret://note", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "secret://note", MIMEType: "text/plain", Text: "key: " + secret("")}}}, nil
		})
	srv.AddResource(&mcp.Resource{Name: "public", URI: "public://readme", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "public://readme", Text: "nothing to hide"}}}, nil
		})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "named", URITemplate: "secret://{name}"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: secret("")}}}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "secret_prompt", Description: "A prompt holding the secret."},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "use " + secret("")}}}}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "elicit", Description: "Asks the client (elicitation) with a message holding text, and returns its action."},
		func(ctx context.Context, req *mcp.CallToolRequest, in hostileIn) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "paste " + secret(in.Text),
				RequestedSchema: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"ok": {Type: "boolean"}}}})
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "progress_message", Description: "Reports progress whose message holds text."},
		func(ctx context.Context, req *mcp.CallToolRequest, in hostileIn) (*mcp.CallToolResult, any, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "at " + secret(in.Text)})
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		})
}

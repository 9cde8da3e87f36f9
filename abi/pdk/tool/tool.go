// Package tool is the Go guest library for tool plugins (ABI 1.4): a Go
// function with an input and an output struct becomes an MCP tool, its
// input and output schemas derived from the types (with
// github.com/google/jsonschema-go, as the go-sdk derives them for servers).
//
//	type In struct {
//		Text string `json:"text" jsonschema:"the text to count words in"`
//	}
//	type Out struct {
//		Words int `json:"words"`
//	}
//
//	func init() {
//		tool.Register(tool.Plugin{Name: "words", Version: "1.0.0", Tools: []tool.Tool{
//			tool.New("count", "Counts the words of a text.", func(c *tool.Context, in In) (Out, error) {
//				return Out{Words: len(strings.Fields(in.Text))}, nil
//			}, tool.ReadOnly()),
//		}})
//	}
//
// The host validates arguments against the input schema before the
// function runs and its output against the output schema after. An error
// from Errorf names a field; the client gets an isError result naming it.
// Build the plugin as a WASI reactor, like a policy:
// GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o words.wasm .
//
// Everything but the exports and host functions (wasm.go) also builds
// natively, so a plugin's tools can be tested with go test (Guest.Call).
package tool

import (
	stdjson "encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
	// segmentio's codec compiles a codec per type instead of walking
	// reflect values per field, which is dear in a Go guest (as in abi/pdk).
	"github.com/segmentio/encoding/json"
)

// Plugin is a tool plugin: its name and version (as describe reports
// them), its tools, and, optionally, policy hooks (Policy's own Name and
// Version are replaced by the plugin's).
type Plugin struct {
	Name    string
	Version string
	Tools   []Tool
	Policy  pdk.Policy
}

// Tool is one tool: its definition and its handler. New builds one from a
// typed function; a Tool written by hand takes raw arguments and returns
// an MCP result.
type Tool struct {
	Def     abi.ToolDef
	Handler func(c *Context, args json.RawMessage) (*abi.CallToolResult, error)
	err     error // from New: the types have no schema
}

// Context is what a tool function knows of its call: who calls, and how to
// talk to them while it runs.
type Context struct {
	Caller        abi.Caller
	ProgressToken any // the client's, nil when it asked for no progress

	progress func(abi.ToolProgress) error
	log      func(abi.ToolLog) error
}

// Progress reports progress to the calling client (notifications/progress),
// if it asked for it. It needs the grant progress = true; total may be 0
// when unknown.
func (c *Context) Progress(progress, total float64, message string) error {
	if c.progress == nil || c.ProgressToken == nil {
		return nil
	}
	return c.progress(abi.ToolProgress{Progress: progress, Total: total, Message: message})
}

// Log sends a log message (notifications/message) to the calling client,
// which receives it if its log level lets it through. It needs the grant
// client_log = true. level is an MCP level: "debug", "info", "warning",
// "error", ...
func (c *Context) Log(level string, data any) error {
	if c.log == nil {
		return nil
	}
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return c.log(abi.ToolLog{Level: level, Data: b})
}

// FieldError is a tool error that names the argument at fault.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// Errorf returns a tool error naming field (a dotted path into the
// arguments; "" for the call as a whole).
func Errorf(field, format string, args ...any) error {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// Option changes a Tool that New builds.
type Option func(*Tool)

// Title sets the tool's human-readable title.
func Title(title string) Option { return func(t *Tool) { t.Def.Title = title } }

func annotations(t *Tool) *abi.Annotations {
	if t.Def.Annotations == nil {
		t.Def.Annotations = &abi.Annotations{}
	}
	return t.Def.Annotations
}

// ReadOnly declares that the tool changes nothing (readOnlyHint): plan
// mode (builtin:modes) lets it run.
func ReadOnly() Option {
	return func(t *Tool) { yes := true; annotations(t).ReadOnlyHint = &yes }
}

// Destructive declares that the tool may destroy (destructiveHint): plan
// mode hides and refuses it.
func Destructive() Option {
	return func(t *Tool) {
		yes, no := true, false
		a := annotations(t)
		a.DestructiveHint, a.ReadOnlyHint = &yes, &no
	}
}

// OpenWorld declares that the tool reaches outside systems (openWorldHint).
func OpenWorld() Option {
	return func(t *Tool) { yes := true; annotations(t).OpenWorldHint = &yes }
}

// Idempotent declares that calling the tool again with the same arguments
// changes nothing more (idempotentHint).
func Idempotent() Option {
	return func(t *Tool) { yes := true; annotations(t).IdempotentHint = &yes }
}

// New makes a tool of fn: its input schema derived from In, its output
// schema from Out, and its result Out as structuredContent (and as JSON
// text, for clients that read only content).
func New[In, Out any](name, description string, fn func(c *Context, in In) (Out, error), opts ...Option) Tool {
	t := Tool{Def: abi.ToolDef{Name: name, Description: description}}
	in, err := schemaFor[In]()
	if err != nil {
		t.err = fmt.Errorf("tool %s: input: %w", name, err)
		return t
	}
	out, err := schemaFor[Out]()
	if err != nil {
		t.err = fmt.Errorf("tool %s: output: %w", name, err)
		return t
	}
	t.Def.InputSchema, t.Def.OutputSchema = in, out
	t.Handler = func(c *Context, args json.RawMessage) (*abi.CallToolResult, error) {
		var v In
		if len(args) > 0 {
			if err := json.Unmarshal(args, &v); err != nil {
				return nil, Errorf("", "the arguments do not decode: %v", err)
			}
		}
		o, err := fn(c, v)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("encoding the result: %w", err)
		}
		return &abi.CallToolResult{Content: []abi.Content{{Type: "text", Text: string(b)}}, StructuredContent: b}, nil
	}
	for _, o := range opts {
		o(&t)
	}
	return t
}

func schemaFor[T any]() (json.RawMessage, error) {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, err
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("the type gives a schema of type %q; a tool's arguments and structured output are objects: use a struct", s.Type)
	}
	return stdjson.Marshal(s) // the schema's own MarshalJSON
}

// Guest runs a Plugin's tools as an instance does: JSON in, JSON out. The
// Wasm exports call one built from the registered plugin; tests build
// their own with NewGuest.
type Guest struct {
	p     Plugin
	tools map[string]*Tool
	err   error
}

// NewGuest returns a Guest for p; a problem with p (a tool without a
// schema, a duplicate name) is the error of every call.
func NewGuest(p Plugin) *Guest {
	g := &Guest{p: p, tools: map[string]*Tool{}}
	for i := range p.Tools {
		t := &p.Tools[i]
		switch {
		case t.err != nil:
			g.err = t.err
		case t.Handler == nil:
			g.err = fmt.Errorf("tool %q has no handler", t.Def.Name)
		case !abi.ValidToolName(t.Def.Name):
			g.err = fmt.Errorf("tool name %q is not valid", t.Def.Name)
		case g.tools[t.Def.Name] != nil:
			g.err = fmt.Errorf("two tools are named %q", t.Def.Name)
		}
		g.tools[t.Def.Name] = t
	}
	return g
}

// Tools is the output of mcphost_tools.
func (g *Guest) Tools() ([]byte, error) {
	if g.err != nil {
		return nil, g.err
	}
	out := abi.ToolsOutput{Tools: make([]abi.ToolDef, len(g.p.Tools))}
	for i, t := range g.p.Tools {
		out.Tools[i] = t.Def
	}
	return json.Marshal(out)
}

// Invoke runs mcphost_tool_invoke on input, with c's progress and log
// functions (nil: none). Its error is a plugin error; a tool's own
// failure is in the output, as a ToolError.
func (g *Guest) Invoke(input []byte, c *Context) (out []byte, err error) {
	if g.err != nil {
		return nil, g.err
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("tool: panic: %v", r)
		}
	}()
	var in abi.ToolInvokeInput
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, fmt.Errorf("tool: input: %w", err)
	}
	t := g.tools[in.Name]
	if t == nil {
		return json.Marshal(abi.ToolError{Message: "no tool " + strconv.Quote(in.Name)})
	}
	if c == nil {
		c = &Context{}
	}
	c.Caller, c.ProgressToken = in.Caller, in.ProgressToken
	res, err := t.Handler(c, in.Arguments)
	if err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return json.Marshal(abi.ToolError{Field: fe.Field, Message: fe.Message})
		}
		return json.Marshal(abi.ToolError{Message: err.Error()})
	}
	if res == nil {
		res = &abi.CallToolResult{}
	}
	if res.Content == nil {
		res.Content = []abi.Content{}
	}
	return json.Marshal(res)
}

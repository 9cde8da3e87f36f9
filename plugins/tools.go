package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	fastjson "github.com/segmentio/encoding/json"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/plugins/internal/extismhost"
)

// Plugin kinds (Spec.Kind).
const (
	KindPolicy = ""      // a policy: its hooks run in the chain
	KindTools  = "tools" // a tool plugin: serves tools of its own (ABI 1.4)
)

// HookToolInvoke names the calls of mcphost_tool_invoke in statistics
// (HookStats) and errors; it is no hook a describe may name.
const HookToolInvoke = "tool_invoke"

// hookTools names the mcphost_tools call at load in errors.
const hookTools = "tools"

// MaxTools bounds how many tools one plugin may serve.
const MaxTools = 1024

// Tool is one tool of a tool plugin's loaded version: its definition, and
// its schemas resolved for validation.
type Tool struct {
	Def abi.ToolDef
	in  *jsonschema.Resolved
	out *jsonschema.Resolved // nil without an output schema
}

// ToolOutcome is what a tool call gave: a result (MCP CallToolResult JSON,
// checked), or a ToolError for the client, from the guest or from the
// host's validation of the arguments or of the structured output.
type ToolOutcome struct {
	Result    json.RawMessage
	ToolError *abi.ToolError

	structured json.RawMessage // the result's structuredContent, if any
}

// ToolCall is what a tool call's host functions reach: the calling client
// (progress and log messages). Nil sends nothing.
type ToolCall = extismhost.ToolCall

// KVStore keeps the key-value stores of tool plugins, one namespace per
// plugin name (so a new version of a plugin reads what the old one wrote).
type KVStore interface {
	Get(ctx context.Context, plugin, key string) (value []byte, ok bool, err error)
	Set(ctx context.Context, plugin, key string, value []byte) error // nil value deletes
}

// KVLimit is the bytes of keys and values a tool plugin's key-value store
// holds at most, in memory and in the engine's store (abi/SPEC.md 14.4).
const KVLimit = 64 << 20

// NewMemoryKV returns a KVStore in memory, capped at maxBytes per plugin
// (keys and values); 0 means KVLimit.
func NewMemoryKV(maxBytes int) KVStore {
	if maxBytes <= 0 {
		maxBytes = KVLimit
	}
	return &memoryKV{max: maxBytes, data: map[string]map[string][]byte{}, size: map[string]int{}}
}

type memoryKV struct {
	mu   sync.Mutex
	max  int
	data map[string]map[string][]byte
	size map[string]int
}

func (m *memoryKV) Get(_ context.Context, plugin, key string) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.data[plugin][key]
	return bytes.Clone(v), ok, nil
}

func (m *memoryKV) Set(_ context.Context, plugin, key string, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ns := m.data[plugin]
	if ns == nil {
		ns = map[string][]byte{}
		m.data[plugin] = ns
	}
	size := m.size[plugin]
	if old, ok := ns[key]; ok {
		size -= len(key) + len(old)
	}
	if value == nil {
		delete(ns, key)
		m.size[plugin] = size
		return nil
	}
	if size+len(key)+len(value) > m.max {
		return fmt.Errorf("the store of plugin %s would pass its %d bytes", plugin, m.max)
	}
	ns[key] = bytes.Clone(value)
	m.size[plugin] = size + len(key) + len(value)
	return nil
}

// pluginKV is one plugin's namespace of a KVStore.
type pluginKV struct {
	store  KVStore
	plugin string
}

func (k pluginKV) Get(ctx context.Context, key string) ([]byte, bool, error) {
	return k.store.Get(ctx, k.plugin, key)
}

func (k pluginKV) Set(ctx context.Context, key string, v []byte) error {
	return k.store.Set(ctx, k.plugin, key, v)
}

// loadTools checks a tool plugin at load: its ABI version, its two exports,
// and its tool definitions, asked once of the instance that described.
func (p *Plugin) loadTools(ctx context.Context, in *instance, exports map[string]bool) (keep bool, err error) {
	if _, minor, _ := parseABI(p.desc.ABI); minor < abi.ToolsMinor {
		return true, fmt.Errorf("%w: a tool plugin needs ABI 1.%d or later, the plugin declares %s", ErrInvalidDescribe, abi.ToolsMinor, p.desc.ABI)
	}
	for _, e := range []string{abi.ExportTools, abi.ExportToolInvoke} {
		if !exports[e] {
			return true, fmt.Errorf("%w: a tool plugin must export %s", ErrMissingExport, e)
		}
	}
	out, keep, err := p.callInstance(ctx, in, hookTools, abi.ExportTools, nil)
	if err != nil {
		return keep, err
	}
	tools, err := decodeTools(out)
	if err != nil {
		return true, err
	}
	p.tools = tools
	p.toolIndex = make(map[string]*Tool, len(tools))
	for _, t := range tools {
		p.toolIndex[t.Def.Name] = t
	}
	return true, nil
}

// decodeTools checks mcphost_tools output: a JSON object with a "tools"
// array of definitions with valid, unique names, input schemas of type
// "object" and schemas that resolve (draft 2020-12 or draft-07).
func decodeTools(data []byte) ([]*Tool, error) {
	var out abi.ToolsOutput
	if err := strictObject(data, &out); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOutput, err)
	}
	if out.Tools == nil {
		return nil, fmt.Errorf("%w: no \"tools\" array", ErrInvalidOutput)
	}
	if len(out.Tools) > MaxTools {
		return nil, fmt.Errorf("%w: %d tools, more than %d", ErrInvalidOutput, len(out.Tools), MaxTools)
	}
	seen := map[string]bool{}
	tools := make([]*Tool, 0, len(out.Tools))
	for i, d := range out.Tools {
		where := fmt.Sprintf("tools[%d] (%q)", i, d.Name)
		switch {
		case !abi.ValidToolName(d.Name):
			return nil, fmt.Errorf("%w: %s: a name must be 1 to %d characters of A-Z, a-z, 0-9, _ and -, the first a letter or _", ErrInvalidOutput, where, abi.MaxToolNameLength)
		case seen[d.Name]:
			return nil, fmt.Errorf("%w: %s: duplicate name", ErrInvalidOutput, where)
		}
		seen[d.Name] = true
		t := &Tool{Def: d}
		var err error
		if t.in, err = resolveSchema(d.InputSchema, true); err != nil {
			return nil, fmt.Errorf("%w: %s: inputSchema: %w", ErrInvalidOutput, where, err)
		}
		if len(bytes.TrimSpace(d.OutputSchema)) > 0 && !bytes.Equal(bytes.TrimSpace(d.OutputSchema), []byte("null")) {
			if t.out, err = resolveSchema(d.OutputSchema, true); err != nil {
				return nil, fmt.Errorf("%w: %s: outputSchema: %w", ErrInvalidOutput, where, err)
			}
		} else {
			t.Def.OutputSchema = nil
		}
		if len(d.Icons) > 0 {
			var icons []json.RawMessage
			if err := json.Unmarshal(d.Icons, &icons); err != nil {
				return nil, fmt.Errorf("%w: %s: icons is not an array", ErrInvalidOutput, where)
			}
		}
		if len(d.Meta) > 0 && !isObject(d.Meta) {
			return nil, fmt.Errorf("%w: %s: _meta is not an object", ErrInvalidOutput, where)
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// resolveSchema decodes and resolves a JSON Schema; object says it must
// be of type "object" (MCP asks that of tool schemas).
func resolveSchema(raw json.RawMessage, object bool) (*jsonschema.Resolved, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("missing")
	}
	if !isObject(raw) {
		return nil, errors.New("not a JSON object")
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if object {
		// Exactly "type": encoding/json matches keys without regard to
		// case, but clients (and the go-sdk's AddTool) read "type" alone.
		var top map[string]json.RawMessage
		if err := json.Unmarshal(raw, &top); err != nil {
			return nil, err
		}
		if t := bytes.TrimSpace(top["type"]); !bytes.Equal(t, []byte(`"object"`)) || s.Type != "object" {
			return nil, fmt.Errorf("type must be \"object\", not %s", orNone(t))
		}
	}
	// Schemas are the plugin's own: references stay inside them.
	r, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: false})
	if err != nil {
		return nil, err
	}
	return r, nil
}

func orNone(b []byte) string {
	if len(b) == 0 {
		return "missing"
	}
	return string(b)
}

// Tools returns the definitions of a tool plugin's tools, in its order;
// nil for a policy.
func (p *Plugin) Tools() []abi.ToolDef {
	out := make([]abi.ToolDef, len(p.tools))
	for i, t := range p.tools {
		out[i] = t.Def
	}
	return out
}

// InvokeTool calls one tool of a tool plugin. Arguments that fail the
// tool's input schema never reach the guest, and structured output that
// fails its output schema never reaches the client: both, like the
// guest's own tool error, come back as ToolOutcome.ToolError naming the
// field. The guest's failures are errors as for Call (ErrTimeout,
// *TrapError, *PluginError, ErrOutputTooLarge, ErrUnavailable, ...), and
// ErrInvalidOutput for output that is neither a result nor a tool error.
// call receives the guest's progress and log messages.
func (p *Plugin) InvokeTool(ctx context.Context, in *abi.ToolInvokeInput, call ToolCall) (*ToolOutcome, error) {
	t := p.toolIndex[in.Name]
	if t == nil {
		return nil, fmt.Errorf("%w: %s: no tool %q", ErrNoHook, p.spec.Name, in.Name)
	}
	args := bytes.TrimSpace(in.Arguments)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = []byte("{}")
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return &ToolOutcome{ToolError: &abi.ToolError{Message: "the arguments are not JSON: " + err.Error()}}, nil
	}
	if err := t.in.Validate(v); err != nil {
		return &ToolOutcome{ToolError: schemaError("", err)}, nil
	}
	input := *in
	input.Arguments = args
	data, err := json.Marshal(&input)
	if err != nil {
		return nil, fmt.Errorf("plugins: %s: encoding the tool call: %w", p.spec.Name, err)
	}
	if call != nil {
		ctx = extismhost.WithToolCall(ctx, call)
	}
	start := time.Now()
	who := CallerKey(in.Caller)
	out, err := p.call(ctx, &who, HookToolInvoke, abi.ExportToolInvoke, data)
	if err == nil {
		var o *ToolOutcome
		if o, err = decodeToolInvoke(out); err == nil {
			if err = t.checkOutput(o); err == nil {
				p.recordHook(HookToolInvoke, time.Since(start), nil)
				p.record(nil, true, &who)
				return o, nil
			}
		}
		if errors.Is(err, errOutputSchema) {
			p.recordHook(HookToolInvoke, time.Since(start), nil)
			p.record(nil, true, &who)
			var se *schemaFailure
			errors.As(err, &se)
			return &ToolOutcome{ToolError: se.te}, nil
		}
		p.recordHook(HookToolInvoke, time.Since(start), err)
		p.record(nil, true, &who)
		p.noteFailure(err)
		return nil, err
	}
	p.recordHook(HookToolInvoke, time.Since(start), err)
	p.record(err, true, &who)
	return nil, err
}

var errOutputSchema = errors.New("structured output does not match the output schema")

type schemaFailure struct{ te *abi.ToolError }

func (e *schemaFailure) Error() string { return e.te.Message }
func (e *schemaFailure) Unwrap() error { return errOutputSchema }

// checkOutput validates a result's structured content against the tool's
// output schema: a tool with one must give structured content that fits.
func (t *Tool) checkOutput(o *ToolOutcome) error {
	if t.out == nil || o.ToolError != nil {
		return nil
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	if err := strictDecode(o.Result, &r); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOutput, err)
	}
	if r.IsError {
		return nil // a tool's own error result need not fit the schema
	}
	if o.structured == nil {
		return &schemaFailure{te: &abi.ToolError{Message: "the tool has an output schema but returned no structuredContent"}}
	}
	var v any
	if err := json.Unmarshal(o.structured, &v); err != nil {
		return fmt.Errorf("%w: structuredContent: %w", ErrInvalidOutput, err)
	}
	if err := t.out.Validate(v); err != nil {
		te := schemaError("structuredContent", err)
		te.Message = "the tool's output does not match its output schema: " + te.Message
		return &schemaFailure{te: te}
	}
	return nil
}

// MaxResultDepth is the deepest nesting of objects and arrays a tool
// plugin's output may have. MCP clients decode messages up to some depth
// (the go-sdk's is 1000), and a result reaches them inside a JSON-RPC
// message: anything near that is no tool's answer.
const MaxResultDepth = 512

// ErrTooDeep is ErrInvalidOutput's cause for an output nested deeper than
// MaxResultDepth.
var ErrTooDeep = fmt.Errorf("the result is nested deeper than %d levels", MaxResultDepth)

// jsonDepth is the deepest nesting of objects and arrays in data, which
// need not be valid JSON: brackets inside strings do not count.
func jsonDepth(data []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > deepest {
				deepest = depth
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// strictDecode decodes one JSON value into v, matching field names
// exactly (clients read "content", not "Content"), and refuses trailing
// data.
func strictDecode(data []byte, v any) error {
	rest, err := fastjson.Parse(data, v, fastjson.DontMatchCaseInsensitiveStructFields)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// invokeOutput is mcphost_tool_invoke's output, decoded once: the fields
// of a CallToolResult and of a ToolError.
type invokeOutput struct {
	Content           *[]abi.Content  `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
	Meta              json.RawMessage `json:"_meta"`
	Field             string          `json:"field"`
	Message           *string         `json:"message"`
}

// decodeToolInvoke checks mcphost_tool_invoke output: a CallToolResult
// (an object with "content" or "structuredContent") or a ToolError (an
// object with "message" and neither of those). It decodes once, with
// segmentio's codec: a tool call's output is on every call's path.
func decodeToolInvoke(data []byte) (*ToolOutcome, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, fmt.Errorf("%w: output is not a JSON object", ErrInvalidOutput)
	}
	if d := jsonDepth(data); d > MaxResultDepth {
		return nil, fmt.Errorf("%w: %w: the result is nested %d levels deep", ErrInvalidOutput, ErrTooDeep, d)
	}
	var o invokeOutput
	if err := strictDecode(data, &o); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOutput, err)
	}
	sc := bytes.TrimSpace(o.StructuredContent)
	hasStructured := len(sc) > 0 && !bytes.Equal(sc, []byte("null"))
	if o.Content == nil && !hasStructured {
		if o.Message == nil {
			return nil, fmt.Errorf("%w: neither a result (\"content\" or \"structuredContent\") nor a tool error (\"message\")", ErrInvalidOutput)
		}
		if *o.Message == "" {
			return nil, fmt.Errorf("%w: tool error with an empty \"message\"", ErrInvalidOutput)
		}
		return &ToolOutcome{ToolError: &abi.ToolError{Field: o.Field, Message: *o.Message}}, nil
	}
	if o.Content != nil {
		for i, c := range *o.Content {
			switch c.Type {
			case "text", "image", "audio", "resource", "resource_link":
			default:
				return nil, fmt.Errorf("%w: result: content[%d]: unknown type %q", ErrInvalidOutput, i, c.Type)
			}
		}
	}
	if hasStructured && sc[0] != '{' {
		return nil, fmt.Errorf("%w: result: structuredContent is not an object", ErrInvalidOutput)
	}
	if m := bytes.TrimSpace(o.Meta); len(m) > 0 && m[0] != '{' && !bytes.Equal(m, []byte("null")) {
		return nil, fmt.Errorf("%w: result: _meta is not an object", ErrInvalidOutput)
	}
	// The go-sdk reads the content blocks' own fields; a block it cannot
	// read is refused there, as an upstream's would be.
	out := &ToolOutcome{Result: data}
	if hasStructured {
		out.structured = sc
	}
	if o.Content == nil {
		// MCP asks for content; a result with structured content only
		// gets it as text, as the go-sdk does for typed tools.
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(data, &probe); err != nil {
			return nil, fmt.Errorf("%w: result: %w", ErrInvalidOutput, err)
		}
		probe["content"] = json.RawMessage(`[{"type":"text","text":` + strconv.Quote(string(sc)) + `}]`)
		b, err := json.Marshal(probe)
		if err != nil {
			return nil, fmt.Errorf("%w: result: %w", ErrInvalidOutput, err)
		}
		out.Result = b
	}
	return out, nil
}

// schemaPath matches the schema locations jsonschema-go's errors name.
var schemaPath = regexp.MustCompile(`validating (/[^:\s]*)`)

var missingProps = regexp.MustCompile(`(?:required: missing properties:|unexpected additional properties) \["?([^"\]]*)`)

// schemaError turns a jsonschema-go validation error into a ToolError
// naming the field at fault, as a dotted path below root.
func schemaError(root string, err error) *abi.ToolError {
	msg := err.Error()
	field := ""
	if ms := schemaPath.FindAllStringSubmatch(msg, -1); len(ms) > 0 {
		field = fieldOf(ms[len(ms)-1][1])
	}
	if m := missingProps.FindStringSubmatch(msg); m != nil {
		field = joinField(field, m[1])
	}
	field = joinField(root, field)
	// The innermost cause says what is wrong; the wrapping names schemas.
	cause := msg
	for strings.HasPrefix(cause, "validating ") {
		_, rest, ok := strings.Cut(cause, ": ")
		if !ok {
			break
		}
		cause = rest
	}
	if field != "" {
		return &abi.ToolError{Field: field, Message: fmt.Sprintf("%s: %s", field, cause)}
	}
	return &abi.ToolError{Message: cause}
}

// fieldOf turns a schema location (/properties/a/items/properties/b) into
// the instance's field (a[].b).
func fieldOf(loc string) string {
	parts := strings.Split(strings.TrimPrefix(loc, "/"), "/")
	var b strings.Builder
	for i := 0; i < len(parts); i++ {
		switch parts[i] {
		case "properties", "patternProperties", "dependentSchemas":
			if i+1 < len(parts) {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(unescapePointer(parts[i+1]))
				i++
			}
		case "items", "prefixItems", "additionalItems", "contains":
			b.WriteString("[]")
			if parts[i] == "prefixItems" && i+1 < len(parts) {
				i++
			}
		}
	}
	return b.String()
}

func joinField(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "." + b
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// InvokeToolRaw sends input to mcphost_tool_invoke as it is, unvalidated
// (the compatibility kit's probes add fields no version defines), and
// checks the output as the host does. The outcome is a result or a tool
// error; an error is the guest's failure or output the host refuses
// (ErrInvalidOutput, also for structured content its output schema
// refuses).
func (p *Plugin) InvokeToolRaw(ctx context.Context, input []byte) (*ToolOutcome, error) {
	out, err := p.call(ctx, nil, HookToolInvoke, abi.ExportToolInvoke, input)
	if err != nil {
		return nil, err
	}
	o, err := decodeToolInvoke(out)
	if err != nil {
		return nil, err
	}
	var in struct{ Name string }
	_ = json.Unmarshal(input, &in)
	if t := p.toolIndex[in.Name]; t != nil {
		if err := t.checkOutput(o); err != nil {
			var se *schemaFailure
			if errors.As(err, &se) {
				return nil, fmt.Errorf("%w: %s", ErrInvalidOutput, se.te.Message)
			}
			return nil, err
		}
	}
	return o, nil
}

// ToolSet returns a tool plugin's tools, definitions and schemas.
func (p *Plugin) ToolSet() []*Tool { return slices.Clone(p.tools) }

// MinimalArguments builds the smallest arguments a tool's input schema
// accepts that this simple builder can find (its required properties, each
// the first enum value, its const, or a minimal value of its type), or
// false when it finds none.
func (t *Tool) MinimalArguments() (json.RawMessage, bool) {
	var s map[string]any
	if json.Unmarshal(t.Def.InputSchema, &s) != nil {
		return nil, false
	}
	v := minimal(s, 0)
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var inst any
	_ = json.Unmarshal(b, &inst)
	if t.in.Validate(inst) != nil {
		return nil, false
	}
	return b, true
}

func minimal(s map[string]any, depth int) any {
	if depth > 8 {
		return nil
	}
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	if d, ok := s["default"]; ok {
		return d
	}
	typ, _ := s["type"].(string)
	if ts, ok := s["type"].([]any); ok && len(ts) > 0 {
		typ, _ = ts[0].(string)
	}
	switch typ {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		for _, r := range req {
			name, _ := r.(string)
			ps, _ := props[name].(map[string]any)
			out[name] = minimal(ps, depth+1)
		}
		return out
	case "array":
		n := 0
		if m, ok := s["minItems"].(float64); ok {
			n = int(m)
		}
		items, _ := s["items"].(map[string]any)
		out := make([]any, 0, n)
		for range min(n, 16) {
			out = append(out, minimal(items, depth+1))
		}
		return out
	case "string":
		n := 1
		if m, ok := s["minLength"].(float64); ok {
			n = max(int(m), 1)
		}
		return strings.Repeat("a", min(n, 1024))
	case "integer", "number":
		if m, ok := s["minimum"].(float64); ok {
			return m
		}
		return 1
	case "boolean":
		return false
	case "null":
		return nil
	}
	return map[string]any{}
}

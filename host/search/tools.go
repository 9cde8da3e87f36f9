package search

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/internal/wire"
)

// The tools a session in search exposure lists in place of the catalog.
// They take precedence over a catalog tool of the same exposed name
// (possible only with tools.prefix = "never"), which call_tool still
// reaches.
const (
	SearchToolName   = "search_tools"
	DescribeToolName = "describe_tools"
	CallToolName     = "call_tool"
)

// Bounds of the tools' input.
const (
	DefaultLimit  = 5
	MaxLimit      = 50
	maxQueryBytes = 1000
	maxDescribe   = 20
	// MaxFound bounds how many found tools a session's listing gains; past
	// it a search still answers, and every tool stays callable.
	MaxFound = 200
	// shortDescription bounds the description a search answers with.
	shortDescription = 200
)

// IsMeta reports whether name is one of the three tools of search
// exposure.
func IsMeta(name string) bool {
	return name == SearchToolName || name == DescribeToolName || name == CallToolName
}

// TaskCall is how a task-mode tools/call of name runs under search
// exposure: call_tool of a catalog tool is that tool's own call (which its
// server may run as a task); the search tools, and call_tool of one or
// with input it refuses, run whole, as their plain call does (whole).
// Any other name is returned as it is.
func TaskCall(name string, args json.RawMessage) (string, json.RawMessage, bool) {
	if !IsMeta(name) {
		return name, args, false
	}
	if name == CallToolName {
		if in, err := DecodeCall(args); err == nil && !IsMeta(in.Name) {
			return in.Name, in.Arguments, false
		}
	}
	return name, args, true
}

// The definitions are written for models: what the tool is for, what to
// put in the query (the task in plain words, not a name or a pattern), and
// what to do with what it returns. Users of other gateways report that
// models fail on search tools whose descriptions leave these out.
var metaTools = []*mcp.Tool{
	{
		Name:  SearchToolName,
		Title: "Search tools",
		Description: "Find the tools for a task. Only a few tools are listed here; many more are available and are found with this tool. " +
			"Describe what you want to do in plain words, as you would to a colleague (for example \"convert a time to another time zone\" or \"delete a file\"); " +
			"do not guess tool names or use wildcards or regular expressions. " +
			"Returns the best matching tools first, each with its name, title and a short description. " +
			"Call a tool found by its name; describe_tools gives its full input schema first. If nothing fits, search again with other words.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"The task, in plain words: what you want to do, not a tool name."},` +
			`"limit":{"type":"integer","minimum":1,"maximum":50,"default":5,"description":"How many tools to return at most (default 5)."}},` +
			`"required":["query"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"tools":{"type":"array","items":{"type":"object","properties":{` +
			`"name":{"type":"string"},"title":{"type":"string"},"description":{"type":"string"}},"required":["name"]}}},"required":["tools"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: boolPtr(false)},
	},
	{
		Name:  DescribeToolName,
		Title: "Describe tools",
		Description: "Give the full definitions of tools by their names, as search_tools returned them: description, input schema (the arguments a call takes), output schema and annotations. " +
			"Use it before calling a tool whose arguments you do not know.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"names":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":20,"description":"The tools' names, exactly as search_tools returned them."}},` +
			`"required":["names"],"additionalProperties":false}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: boolPtr(false)},
	},
	{
		Name:  CallToolName,
		Title: "Call a tool",
		Description: "Call a tool found with search_tools, by its name, with its arguments. " +
			"Calling that tool directly by its name works too and is better; use call_tool where you can only call the tools that are listed.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"name":{"type":"string","description":"The tool's name, exactly as search_tools returned it."},` +
			`"arguments":{"type":"object","description":"The tool's arguments, as its input schema (describe_tools) asks."}},` +
			`"required":["name"],"additionalProperties":false}`),
	},
}

func boolPtr(b bool) *bool { return &b }

// Always reports whether a tool's exposed name is one that tools.always
// names (exact names, or patterns of path.Match).
func Always(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// CheckExposure reports what is wrong with a tools config's exposure and
// always ("" is catalog.ExposureList).
func CheckExposure(t catalog.ToolsConfig) error {
	switch t.Exposure {
	case "", catalog.ExposureList, catalog.ExposureSearch, catalog.ExposureCode:
	default:
		return fmt.Errorf("search: unknown exposure %q (want %q, %q or %q)", t.Exposure, catalog.ExposureList, catalog.ExposureSearch, catalog.ExposureCode)
	}
	return CheckAlways(t.Always)
}

// CheckAlways reports the first pattern of always that is not valid.
func CheckAlways(always []string) error {
	for _, p := range always {
		if p == "" {
			return errors.New("search: always: an empty name")
		}
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("search: always: pattern %q: %w", p, err)
		}
	}
	return nil
}

// List is the tools/list answer of a session in search exposure: the
// three tools of search, then, in the view's order, the view's tools that
// always names or the session found (found may be nil); and the execution
// objects of those tools.
func List(view []abi.Tool, always []string, found *Found) (res *mcp.ListToolsResult, exec wire.Executions) {
	res = &mcp.ListToolsResult{Tools: append(make([]*mcp.Tool, 0, len(metaTools)+len(always)), metaTools...)}
	for i := range view {
		t := &view[i]
		if IsMeta(t.Name) {
			continue // the search tool of that name stands in for it
		}
		if Always(always, t.Name) || found.Has(t.Name) {
			res.Tools = append(res.Tools, exec.Add(wire.MCPTool(t), t.Execution))
		}
	}
	return res, exec
}

// Found is the tools a session's searches returned, which its listing
// shows from then on. The zero value is empty; a nil *Found keeps nothing.
type Found struct {
	mu    sync.Mutex
	names map[string]struct{}
}

// Has reports whether name was found.
func (f *Found) Has(name string) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.names[name]
	return ok
}

// add records names and reports whether any was new.
func (f *Found) add(names []string) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	grew := false
	for _, n := range names {
		if _, ok := f.names[n]; ok || len(f.names) >= MaxFound {
			continue
		}
		if f.names == nil {
			f.names = make(map[string]struct{})
		}
		f.names[n] = struct{}{}
		grew = true
	}
	return grew
}

// Session is what a call of one of the search tools needs of the gateway,
// for one caller and session.
type Session struct {
	// Scope returns the caller's view, searchable.
	Scope func() *Scope
	// Always is tools.always: those are listed already.
	Always []string
	// Found is the session's found tools; nil where the session keeps
	// none (a request without a session).
	Found *Found
	// ListChanged tells the session's client that its listing grew.
	ListChanged func()
	// Call calls a tool of the caller's view by its exposed name, as a
	// tools/call of it would (call_tool).
	Call func(ctx context.Context, name string, args json.RawMessage) (mcp.Result, error)
}

// Handle answers a call of one of the search tools (IsMeta). Bad input
// is a tool error, which the model can read and correct.
func (s *Session) Handle(ctx context.Context, name string, args json.RawMessage) (mcp.Result, error) {
	switch name {
	case SearchToolName:
		in, err := DecodeSearch(args)
		if err != nil {
			return wire.ToolError("%s: %v", name, err), nil
		}
		return s.search(in), nil
	case DescribeToolName:
		names, err := DecodeDescribe(args)
		if err != nil {
			return wire.ToolError("%s: %v", name, err), nil
		}
		return s.describe(names)
	case CallToolName:
		in, err := DecodeCall(args)
		if err != nil {
			return wire.ToolError("%s: %v", name, err), nil
		}
		if IsMeta(in.Name) && !s.inView(in.Name) {
			return wire.ToolError("%s: %s is not a tool to call through it; call it directly", name, in.Name), nil
		}
		return s.Call(ctx, in.Name, in.Arguments)
	}
	return nil, fmt.Errorf("search: %q is not a search tool", name)
}

// inView reports whether the caller's view has a tool named name.
func (s *Session) inView(name string) bool {
	tools := s.Scope().tools
	for i := range tools {
		if tools[i].Name == name {
			return true
		}
	}
	return false
}

// summary is one tool as search_tools answers it.
type summary struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
}

func (s *Session) search(in SearchInput) *mcp.CallToolResult {
	hits := s.Scope().Search(in.Query, in.Limit)
	out := struct {
		Tools []summary `json:"tools"`
	}{Tools: make([]summary, 0, len(hits))}
	var text strings.Builder
	var names []string
	for _, h := range hits {
		t := h.Tool
		title := t.Title
		if title == "" && t.Annotations != nil {
			title = t.Annotations.Title
		}
		sm := summary{Name: t.Name, Title: title, Description: short(t.Description)}
		out.Tools = append(out.Tools, sm)
		names = append(names, t.Name)
		fmt.Fprintf(&text, "%s", sm.Name)
		if sm.Title != "" {
			fmt.Fprintf(&text, " (%s)", sm.Title)
		}
		if sm.Description != "" {
			fmt.Fprintf(&text, ": %s", sm.Description)
		}
		text.WriteByte('\n')
	}
	if len(hits) == 0 {
		text.WriteString("No tool matches. Search again with other words for the task.")
	} else {
		text.WriteString("Call a tool by its name; describe_tools gives its input schema.")
	}
	var fresh []string
	for _, n := range names {
		if !Always(s.Always, n) {
			fresh = append(fresh, n)
		}
	}
	if s.Found.add(fresh) && s.ListChanged != nil {
		s.ListChanged()
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text.String()}}, StructuredContent: out}
}

// short is the first sentence of a description, at most shortDescription
// bytes (cut at a word, on a rune boundary).
func short(d string) string {
	d = strings.Join(strings.Fields(d), " ")
	if i := strings.Index(d, ". "); i >= 0 {
		d = d[:i+1]
	}
	if len(d) <= shortDescription {
		return d
	}
	cut := shortDescription
	for cut > 0 && !utf8.RuneStart(d[cut]) {
		cut--
	}
	if sp := strings.LastIndexByte(d[:cut], ' '); sp > shortDescription/2 {
		cut = sp
	}
	return d[:cut] + "…"
}

func (s *Session) describe(names []string) (*mcp.CallToolResult, error) {
	tools := s.Scope().tools
	out := struct {
		Tools   []*mcp.Tool `json:"tools"`
		Unknown []string    `json:"unknown,omitempty"`
	}{Tools: []*mcp.Tool{}}
	for _, n := range names {
		found := false
		for i := range tools {
			if tools[i].Name == n {
				out.Tools = append(out.Tools, wire.MCPTool(&tools[i]))
				found = true
				break
			}
		}
		if !found {
			out.Unknown = append(out.Unknown, n)
		}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("search: encoding tool definitions: %w", err)
	}
	text := string(b)
	if len(out.Unknown) > 0 {
		text += "\nUnknown tools (search_tools finds the names): " + strings.Join(out.Unknown, ", ")
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: json.RawMessage(b)}, nil
}

// SearchInput is search_tools' arguments.
type SearchInput struct {
	Query string
	Limit int
}

// DecodeSearch reads search_tools' arguments: a JSON object with a
// non-empty string query (at most 1000 bytes) and an optional integer
// limit from 1 to 50 (default 5); nothing else.
func DecodeSearch(args json.RawMessage) (SearchInput, error) {
	var raw struct {
		Query *string          `json:"query"`
		Limit *json.RawMessage `json:"limit"`
	}
	if err := strictObject(args, &raw, "query", "limit"); err != nil {
		return SearchInput{}, err
	}
	if raw.Query == nil || strings.TrimSpace(*raw.Query) == "" {
		return SearchInput{}, errors.New(`"query" is required: the task in plain words`)
	}
	if len(*raw.Query) > maxQueryBytes {
		return SearchInput{}, fmt.Errorf(`"query" is %d bytes long; at most %d`, len(*raw.Query), maxQueryBytes)
	}
	in := SearchInput{Query: *raw.Query, Limit: DefaultLimit}
	if raw.Limit != nil && string(*raw.Limit) != "null" {
		var n json.Number
		if l := *raw.Limit; l[0] == '"' || json.Unmarshal(l, &n) != nil {
			return SearchInput{}, errors.New(`"limit" must be an integer from 1 to 50`)
		}
		v, err := n.Int64()
		if err != nil || v < 1 || v > MaxLimit {
			return SearchInput{}, errors.New(`"limit" must be an integer from 1 to 50`)
		}
		in.Limit = int(v)
	}
	return in, nil
}

// DecodeDescribe reads describe_tools' arguments: an object whose "names"
// holds 1 to 20 strings.
func DecodeDescribe(args json.RawMessage) ([]string, error) {
	var raw struct {
		Names []string `json:"names"`
	}
	if err := strictObject(args, &raw, "names"); err != nil {
		return nil, err
	}
	if len(raw.Names) == 0 || len(raw.Names) > maxDescribe {
		return nil, fmt.Errorf(`"names" must hold from 1 to %d tool names`, maxDescribe)
	}
	return raw.Names, nil
}

// CallInput is call_tool's arguments.
type CallInput struct {
	Name      string
	Arguments json.RawMessage
}

// DecodeCall reads call_tool's arguments: an object with a non-empty
// string name and an optional object of arguments.
func DecodeCall(args json.RawMessage) (CallInput, error) {
	var raw struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := strictObject(args, &raw, "name", "arguments"); err != nil {
		return CallInput{}, err
	}
	if raw.Name == "" {
		return CallInput{}, errors.New(`"name" is required: a tool's name as search_tools returned it`)
	}
	a := bytes.TrimSpace(raw.Arguments)
	if len(a) == 0 || string(a) == "null" {
		a = nil
	} else if a[0] != '{' {
		return CallInput{}, errors.New(`"arguments" must be an object`)
	}
	return CallInput{Name: raw.Name, Arguments: a}, nil
}

// strictObject decodes args, a JSON object with no fields but allowed,
// into v; missing or null args are an empty object.
func strictObject(args json.RawMessage, v any, allowed ...string) error {
	a := bytes.TrimSpace(args)
	if len(a) == 0 || string(a) == "null" {
		a = []byte("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(a, &fields); err != nil {
		return errors.New("the arguments must be a JSON object")
	}
	for k := range fields {
		ok := false
		for _, al := range allowed {
			ok = ok || k == al
		}
		if !ok {
			return fmt.Errorf("unknown argument %q (it takes %s)", k, strings.Join(allowed, ", "))
		}
	}
	if err := json.Unmarshal(a, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("argument %q has the wrong type (%s)", te.Field, te.Value)
		}
		return errors.New("the arguments must be a JSON object")
	}
	return nil
}

package codemode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
)

// ToolName is the name of the tool that runs scripts. Under code mode it
// is reserved: a catalog tool of that name (possible with prefix =
// "never") is callable from scripts, not by clients.
const ToolName = "run_code"

// MaxScript bounds a script's text, in bytes.
const MaxScript = 64 << 10

// inputSchema is run_code's input: the script, and nothing else.
const inputSchema = `{"type":"object","properties":{"code":{"type":"string","description":"The body of an async JavaScript function: call tools.NAME(args), compute, and return the answer (JSON-encodable)."}},"required":["code"],"additionalProperties":false}`

// instructions open run_code's description; the declarations follow.
const instructions = `Runs a JavaScript program (the body of an async function) that calls the tools declared below and returns only what it computes: do several steps in one call and return a small answer.
- tools.NAME(args) returns the tool's structuredContent, or its text (parsed when it is JSON); a tool's error throws a ToolError with its text. callTool(name, args) returns the whole MCP result.
- console.log output comes back after the value.
- No network, files, modules or timers; limits: %s, %d MiB of memory, %d tool calls per program.
`

// Tool is the run_code tool for a caller whose view holds tools: its
// description declares them (Declarations).
func Tool(tools []abi.Tool, lim Limits) *mcp.Tool {
	lim = lim.WithDefaults()
	return &mcp.Tool{
		Name:        ToolName,
		Title:       "Run code against the tools",
		Description: fmt.Sprintf(instructions, lim.Timeout, lim.Memory>>20, lim.MaxCalls) + "\n" + Declarations(tools),
		InputSchema: json.RawMessage(inputSchema),
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(true)},
	}
}

func ptr[T any](v T) *T { return &v }

// ErrInvalidInput is wrapped by DecodeInput's errors.
var ErrInvalidInput = errors.New("codemode: invalid run_code arguments")

// DecodeInput reads run_code's arguments: an object with one member,
// "code", a non-empty string of at most MaxScript bytes of UTF-8.
func DecodeInput(args json.RawMessage) (string, error) {
	var in struct {
		Code *string `json:"code"`
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return "", fmt.Errorf("%w: want {\"code\": \"...\"}: %v", ErrInvalidInput, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", fmt.Errorf("%w: want one JSON object", ErrInvalidInput)
	}
	switch {
	case in.Code == nil:
		return "", fmt.Errorf("%w: \"code\" is required", ErrInvalidInput)
	case *in.Code == "":
		return "", fmt.Errorf("%w: \"code\" is empty", ErrInvalidInput)
	case len(*in.Code) > MaxScript:
		return "", fmt.Errorf("%w: \"code\" is %d bytes, more than %d", ErrInvalidInput, len(*in.Code), MaxScript)
	case !utf8.ValidString(*in.Code):
		return "", fmt.Errorf("%w: \"code\" is not valid UTF-8", ErrInvalidInput)
	}
	return *in.Code, nil
}

// Result is the outcome as run_code's result: its text (Outcome.Text),
// an error result when the script failed.
func (o *Outcome) Result() *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: o.Err != "", Content: []mcp.Content{&mcp.TextContent{Text: o.Text()}}}
}

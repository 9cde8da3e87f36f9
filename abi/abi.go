// Package abi is the contract between mcphost and its Wasm policy plugins:
// hook and export names, the ABI version, and the JSON messages that cross
// the boundary. It imports no engine; SPEC.md beside it is the normative text.
//
// Every export follows the Extism convention: no parameters, an i32 result
// (0 ok, non-zero a plugin error whose message is set with Extism's error
// output), JSON bytes in through the Extism input and out through its output.
package abi

import "encoding/json"

// Version is the ABI version this package describes. Plugins name the version
// they were built for in their describe output; the host accepts any minor
// version of the same major.
const Version = "1.5"

// Major is the major ABI version; a plugin claiming another major is refused.
const Major = 1

// ConfigABI is the configuration key in which a host of ABI 1.1 or later
// tells every plugin its ABI version ("1.1"), so a guest can use what that
// version adds to outputs. A 1.0 host sets no such key.
const ConfigABI = "mcphost.abi"

// ConfigDescribeKeys is set ("1") by a host of ABI 1.5 or later on a
// second instance when describe failed with configuration keys given: the
// plugin then answers describe with the keys it reads (ConfigKeys) even
// though its configuration is invalid, so that the host can name a
// misspelt key rather than only the error it caused. A plugin that does
// not know the key fails again, and the host reports the first error.
const ConfigDescribeKeys = "mcphost.describe_keys"

// MaxOutputSize is the largest output, in bytes, the host accepts from one
// export call; a larger output is a plugin failure.
const MaxOutputSize = 16 << 20

// Hook names, as they appear in Describe.Hooks. The last three are new in
// ABI 1.2 and govern every MCP method but tools (SPEC.md section 4.5).
const (
	HookToolsList  = "tools_list"
	HookToolCall   = "tool_call"
	HookToolResult = "tool_result"
	HookList       = "list"
	HookRequest    = "request"
	HookMessage    = "message"
)

// Export names of the functions a plugin provides.
const (
	ExportDescribe   = "mcphost_describe"
	ExportToolsList  = "mcphost_tools_list"
	ExportToolCall   = "mcphost_tool_call"
	ExportToolResult = "mcphost_tool_result"
	ExportList       = "mcphost_list"
	ExportRequest    = "mcphost_request"
	ExportMessage    = "mcphost_message"
)

// HookMinor is the minor version of ABI 1 that added each hook.
var HookMinor = map[string]int{
	HookToolsList: 0, HookToolCall: 0, HookToolResult: 0,
	HookList: 2, HookRequest: 2, HookMessage: 2,
}

// MCP methods the hooks of ABI 1.2 see, in the method field of their input.
const (
	// Listings, for the list hook.
	MethodPromptsList           = "prompts/list"
	MethodResourcesList         = "resources/list"
	MethodResourceTemplatesList = "resources/templates/list"
	// Client requests, for the request hook (admission) and the message
	// hook (their results).
	MethodPromptsGet         = "prompts/get"
	MethodResourcesRead      = "resources/read"
	MethodResourcesSubscribe = "resources/subscribe"
	MethodComplete           = "completion/complete"
	// Requests an upstream server sends to the client, for the request
	// hook (admission) and the message hook (their params).
	MethodCreateMessage = "sampling/createMessage"
	MethodElicit        = "elicitation/create"
	MethodRootsList     = "roots/list"
	// Notifications an upstream sends, for the message hook (their params).
	MethodLoggingMessage  = "notifications/message"
	MethodProgress        = "notifications/progress"
	MethodResourceUpdated = "notifications/resources/updated"
)

// ExportForHook maps a hook name to its export; ok is false for unknown hooks.
func ExportForHook(hook string) (export string, ok bool) {
	switch hook {
	case HookToolsList:
		return ExportToolsList, true
	case HookToolCall:
		return ExportToolCall, true
	case HookToolResult:
		return ExportToolResult, true
	case HookList:
		return ExportList, true
	case HookRequest:
		return ExportRequest, true
	case HookMessage:
		return ExportMessage, true
	}
	return "", false
}

// Describe is the output of mcphost_describe.
type Describe struct {
	ABI     string   `json:"abi"`
	Name    string   `json:"name"`
	Version string   `json:"version,omitempty"`
	Hooks   []string `json:"hooks"`
	// Hints, new in ABI 1.1, tell the host when it may skip a hook call or
	// reuse an earlier answer. A host that does not know them (ABI 1.0)
	// ignores them, and calls every hook every time.
	Hints *Hints `json:"hints,omitempty"`
	// ConfigKeys, new in ABI 1.2, are the configuration keys the plugin
	// reads, given its present configuration. When the field is present
	// the host refuses a configuration with any other key (but the
	// reserved mcphost.* ones), so a misspelt key is an error, not a
	// setting silently ignored. A pointer, so that a plugin can declare
	// that it reads none ([]) as well as say nothing (absent).
	ConfigKeys *[]string `json:"configKeys,omitempty"`
}

// ConfigKeyPrefix is the reserved prefix of configuration keys the host
// sets itself (ConfigABI, the built-in's name); no plugin declares them.
const ConfigKeyPrefix = "mcphost."

// Hints are promises a plugin makes about its hooks so that the host can
// call them less often. Each is optional; a plugin that breaks one gets
// answers computed from its earlier output, so promise only what holds for
// every input (SPEC.md section 4.2).
type Hints struct {
	// ListPerTool: tools_list judges each tool on its own. Its output for a
	// list is, in order, its output for each tool alone: that tool (server
	// and tool unchanged, other fields possibly changed) or nothing. The
	// host may then call the hook with only the tools it has not seen, and
	// reuse its answers for the others.
	ListPerTool bool `json:"listPerTool,omitempty"`
	// CallIgnoresArguments: tool_call decides from the tool (name, server,
	// tool, annotations) and the caller only, never from the arguments. The
	// host may reuse an allow or deny for later calls of the same tool.
	CallIgnoresArguments bool `json:"callIgnoresArguments,omitempty"`
	// IgnoresCaller: the answers of tools_list and tool_call do not depend
	// on the caller, so reused answers are shared by all callers.
	IgnoresCaller bool `json:"ignoresCaller,omitempty"`
	// ResultMinBytes: tool_result returns every result whose JSON encoding
	// is shorter than this many bytes unchanged, so the host need not call
	// it for one. Zero means every result is looked at.
	ResultMinBytes int `json:"resultMinBytes,omitempty"`
	// ResultTextPrefixes: tool_result returns unchanged every result none
	// of whose text blocks starts, after leading white space (Unicode's),
	// with one of these strings.
	ResultTextPrefixes []string `json:"resultTextPrefixes,omitempty"`
	// ResultKeywords: tool_result returns unchanged every result in which
	// none of these strings occurs: not in the text of a text block, nor
	// in any string or key of its other blocks or of its structuredContent.
	ResultKeywords []string `json:"resultKeywords,omitempty"`
	// Methods, new in ABI 1.2, names per hook (list, request, message) the
	// MCP methods it acts on; the host calls the hook for no other method.
	// A hook absent from the map acts on every method.
	Methods map[string][]string `json:"methods,omitempty"`
	// MessageKeywords, new in ABI 1.2: message returns unchanged every
	// message in whose JSON none of these strings occurs.
	MessageKeywords []string `json:"messageKeywords,omitempty"`
	// MessageMinBytes, new in ABI 1.2: message returns unchanged every
	// message whose JSON encoding is shorter than this many bytes.
	MessageMinBytes int `json:"messageMinBytes,omitempty"`
}

// IsZero reports whether h promises nothing.
func (h *Hints) IsZero() bool {
	return !h.ListPerTool && !h.CallIgnoresArguments && !h.IgnoresCaller && h.ResultMinBytes == 0 &&
		len(h.ResultTextPrefixes) == 0 && len(h.ResultKeywords) == 0 && len(h.Methods) == 0 &&
		len(h.MessageKeywords) == 0 && h.MessageMinBytes == 0
}

// WantsMethod reports whether a plugin with hints h calls hook for method.
func (h *Hints) WantsMethod(hook, method string) bool {
	if h == nil || h.Methods == nil {
		return true
	}
	ms, ok := h.Methods[hook]
	if !ok {
		return true
	}
	for _, m := range ms {
		if m == method {
			return true
		}
	}
	return false
}

// Values of Caller.AuthMethod.
const (
	AuthKey    = "key"    // a listen.auth key (or the auth_token shorthand)
	AuthOAuth  = "oauth"  // an OAuth 2.1 access token
	AuthConfig = "config" // the identity configured for stdio (listen.auth.stdio_key)
)

// InGroup reports whether the caller is in group.
func (c *Caller) InGroup(group string) bool {
	for _, g := range c.Groups {
		if g == group {
			return true
		}
	}
	return false
}

// Caller describes the downstream client on whose behalf a hook runs.
type Caller struct {
	SessionID     string `json:"sessionId,omitempty"`
	Transport     string `json:"transport,omitempty"` // "stdio", "http", "sse" or "embedded"
	ClientName    string `json:"clientName,omitempty"`
	ClientVersion string `json:"clientVersion,omitempty"`
	// Subject, Groups, Attributes and AuthMethod (new in ABI 1.3) say who
	// the caller is, as authentication established it: a listen.auth key,
	// an OAuth access token's claims, or the identity configured for stdio.
	// All are empty for an unauthenticated caller.
	Subject    string            `json:"subject,omitempty"`
	Groups     []string          `json:"groups,omitempty"`
	Attributes map[string]string `json:"attributes,omitempty"`
	AuthMethod string            `json:"authMethod,omitempty"` // AuthKey, AuthOAuth or AuthConfig
	// Identity is the subject under its ABI 1.0 name; the host fills both.
	Identity string `json:"identity,omitempty"`
	// Meta is the _meta object of the request that caused the hook, if any.
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// Tool is one entry of the catalog as plugins see it. Name is the exposed
// name; Server and Tool identify the upstream tool and are what routing
// follows, whatever a plugin does to Name.
type Tool struct {
	Name         string          `json:"name"`
	Server       string          `json:"server"`
	Tool         string          `json:"tool"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
	// Execution is MCP's execution object of the tool (protocol
	// 2025-11-25: {"taskSupport": "forbidden"|"optional"|"required"}),
	// as mcphost lists it: whether a client may, or must, call the tool
	// as a task (SPEC.md section 5.3). Absent from a tools_list output
	// entry, the host keeps the input entry's.
	Execution json.RawMessage `json:"execution,omitempty"`
	Meta      json.RawMessage `json:"_meta,omitempty"`
}

// Annotations are MCP tool annotations (hints, not guarantees).
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// ToolsListInput is the input of mcphost_tools_list.
type ToolsListInput struct {
	Caller Caller `json:"caller"`
	Tools  []Tool `json:"tools"`
}

// ToolsListOutput is the output of mcphost_tools_list: the tools to expose, in order.
type ToolsListOutput struct {
	Tools []Tool `json:"tools"`
}

// ToolCallInput is the input of mcphost_tool_call.
type ToolCallInput struct {
	Caller    Caller          `json:"caller"`
	Name      string          `json:"name"`
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Annotations are the tool's annotations as its upstream declared them
	// (before any tools_list hook), so a call hook can judge a tool by its
	// hints; nil when the upstream gave none.
	Annotations *Annotations `json:"annotations,omitempty"`
}

// Call actions, the values of CallDecision.Action.
const (
	ActionAllow   = "allow"
	ActionDeny    = "deny"
	ActionRewrite = "rewrite"
	ActionRespond = "respond"
)

// CallDecision is the output of mcphost_tool_call.
type CallDecision struct {
	Action string `json:"action"`
	Reason string `json:"reason,omitempty"` // deny
	// Hidden, new in ABI 1.2, with deny: answer the client as if the tool
	// did not exist (JSON-RPC -32602 unknown tool) rather than with an
	// error result giving the reason.
	Hidden    bool            `json:"hidden,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"` // rewrite
	Result    *CallToolResult `json:"result,omitempty"`    // respond
}

// ToolResultInput is the input of mcphost_tool_result.
type ToolResultInput struct {
	Caller    Caller          `json:"caller"`
	Name      string          `json:"name"`
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Annotations are as in ToolCallInput.
	Annotations *Annotations    `json:"annotations,omitempty"`
	Result      *CallToolResult `json:"result"`
}

// ToolResultOutput is the output of mcphost_tool_result: the result, or,
// since ABI 1.1 and only on a host that set ConfigABI to 1.1 or later,
// Unchanged alone, which passes the result on as it came in without the
// cost of encoding and decoding it again.
type ToolResultOutput struct {
	Result    *CallToolResult `json:"result,omitempty"`
	Unchanged bool            `json:"unchanged,omitempty"`
}

// CallToolResult is an MCP CallToolResult as JSON.
type CallToolResult struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	Meta              json.RawMessage `json:"_meta,omitempty"`
}

// Content is one MCP content block. Type selects which fields are set:
// "text" (Text), "image" and "audio" (Data, MimeType), "resource" (Resource)
// and "resource_link" (URI, Name, Title, Description, MimeType, Size).
type Content struct {
	Type        string          `json:"type"`
	Text        string          `json:"text,omitempty"`
	Data        []byte          `json:"data,omitempty"`
	MimeType    string          `json:"mimeType,omitempty"`
	Resource    json.RawMessage `json:"resource,omitempty"`
	URI         string          `json:"uri,omitempty"`
	Name        string          `json:"name,omitempty"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	Size        *int64          `json:"size,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// Item is one entry of a prompts, resources or resource-templates listing,
// as the list hook sees it. Server and Name identify it and are what the
// host routes by: Name is the prompt's exposed name, the resource's URI or
// the template's URI template. Item is the MCP object the client sees (a
// Prompt, Resource or ResourceTemplate).
type Item struct {
	Server string          `json:"server"`
	Name   string          `json:"name"`
	Item   json.RawMessage `json:"item"`
}

// ListInput is the input of mcphost_list.
type ListInput struct {
	Caller Caller `json:"caller"`
	Method string `json:"method"`
	Items  []Item `json:"items"`
}

// ListOutput is the output of mcphost_list: the entries to expose, in order.
type ListOutput struct {
	Items []Item `json:"items"`
}

// RequestInput is the input of mcphost_request: a request other than
// tools/call, before it is carried. For a client's request Server is the
// upstream it goes to and Name what it names (the prompt's exposed name,
// the resource's URI, the reference of a completion); for a request an
// upstream sends to the client, Server is that upstream and Name is empty.
// Params are the request's params as the client or upstream sent them.
type RequestInput struct {
	Caller Caller          `json:"caller"`
	Method string          `json:"method"`
	Server string          `json:"server"`
	Name   string          `json:"name,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
}

// RequestDecision is the output of mcphost_request: Action is ActionAllow
// or ActionDeny, and Reason says why a request is denied.
type RequestDecision struct {
	Action string `json:"action"`
	Reason string `json:"reason,omitempty"`
	// Hidden, with deny, answers a client as if what it named did not
	// exist (resource not found, unknown prompt) instead of with Reason.
	Hidden bool `json:"hidden,omitempty"`
}

// MessageInput is the input of mcphost_message: something on its way to the
// client that carries content. Message is the MCP result of a client's
// request (prompts/get, resources/read, completion/complete), or the params
// of a notification (notifications/message, notifications/progress,
// notifications/resources/updated) or of a request an upstream sends to the
// client (sampling/createMessage, elicitation/create).
type MessageInput struct {
	Caller  Caller          `json:"caller"`
	Method  string          `json:"method"`
	Server  string          `json:"server"`
	Name    string          `json:"name,omitempty"`
	Message json.RawMessage `json:"message"`
}

// MessageOutput is the output of mcphost_message: the message to send on,
// which must be of the same MCP type as the input's, or Unchanged alone.
type MessageOutput struct {
	Message   json.RawMessage `json:"message,omitempty"`
	Unchanged bool            `json:"unchanged,omitempty"`
}

package abi

import "encoding/json"

// Tool plugins (ABI 1.4, SPEC.md section 14): a plugin that serves MCP tools
// of its own. It exports mcphost_describe as every plugin does (its abi at
// least "1.4"), mcphost_tools and mcphost_tool_invoke.
const (
	ExportTools      = "mcphost_tools"
	ExportToolInvoke = "mcphost_tool_invoke"

	// ToolsMinor is the minor version of ABI 1 that added tool plugins.
	ToolsMinor = 4
)

// The host functions a tool plugin may import (SPEC.md section 14.4), in
// the import module ToolHostModule. Each is granted in the host's config
// and traps when it is not.
const (
	ToolHostModule = "mcphost:tools"
	HostProgress   = "progress" // (i64 block) -> i32: a ToolProgress to the calling client
	HostLog        = "log"      // (i64 block) -> i32: a ToolLog to the calling client
	HostKVGet      = "kv_get"   // (i64 key) -> i64: the value's block, 0 when unset
	HostKVSet      = "kv_set"   // (i64 key, i64 value) -> (): value 0 deletes
)

// CallerMetaKey is the _meta key under which the host tells an in-process
// tool server (a tool plugin's) the Caller of a tools/call; the host sets
// it, replacing whatever a client sent.
const CallerMetaKey = "io.mcphost/caller"

// ToolsOutput is the output of mcphost_tools: the tools the plugin serves,
// named without a prefix (the host names them as it names an upstream's).
type ToolsOutput struct {
	Tools []ToolDef `json:"tools"`
}

// ToolDef is one tool of a tool plugin, in MCP's shape. InputSchema is a
// JSON Schema (draft 2020-12 unless it says otherwise) of type "object";
// OutputSchema, when present, describes structuredContent.
type ToolDef struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
	Icons        json.RawMessage `json:"icons,omitempty"`
	Meta         json.RawMessage `json:"_meta,omitempty"`
}

// ToolInvokeInput is the input of mcphost_tool_invoke: one call of one of
// the plugin's tools, with arguments the host has validated against its
// input schema.
type ToolInvokeInput struct {
	Caller    Caller          `json:"caller"`
	Name      string          `json:"name"` // as in ToolDef.Name, unprefixed
	Arguments json.RawMessage `json:"arguments"`
	// ProgressToken is the client's, when it asked for progress; a guest
	// that reports progress (HostProgress) need not read it.
	ProgressToken any `json:"progressToken,omitempty"`
}

// ToolError is the output of mcphost_tool_invoke for a call the tool
// refuses: the host answers with an isError result naming Field (empty:
// the call as a whole) and carrying Message. A guest tells it from a
// CallToolResult by the absence of "content" and "structuredContent".
type ToolError struct {
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// ToolProgress is what a guest passes to HostProgress.
type ToolProgress struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// ToolLog is what a guest passes to HostLog: an MCP log message
// (notifications/message) to the calling client.
type ToolLog struct {
	Level  string          `json:"level"` // debug, info, notice, warning, error, critical, alert, emergency
	Logger string          `json:"logger,omitempty"`
	Data   json.RawMessage `json:"data"`
}

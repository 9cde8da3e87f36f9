# mcphost quickstart: two small MCP servers from examples/servers, served as
# one endpoint. Run from the repository root:
#
#   go run ./cmd/mcphost run examples/quickstart/config.hcl
#
# then point an MCP client at http://127.0.0.1:7700/mcp.

listen {
  http = "127.0.0.1:7700"
}

server "clock" {
  transport = "stdio"
  command   = "go"
  args      = ["run", "./examples/servers/clock"]
  # The first run compiles the server; later runs start in well under a second.
  connect_timeout = "120s"
}

server "notes" {
  transport = "stdio"
  command   = "go"
  args      = ["run", "./examples/servers/notes", "-dir", "examples/quickstart/notes"]
  connect_timeout = "120s"
}

tools {
  separator       = "__"
  max_name_length = 64
  prefix          = "always"
}

# Policies run as sandboxed Wasm plugins, in this order, on every listing,
# call and result. These are built in (docs/policies.md); drop your own .wasm
# in with source = "./path/to/policy.wasm". Edit this file while mcphost runs
# and the new chain takes over without a restart.

# A filter: nobody deletes notes through this gateway (the tool is hidden and
# a call to it by name is refused).
plugin "no-delete" {
  source = "builtin:deny"
  config = { tools = ["notes__delete_note"] }
}

# Titles for every tool (clients show them), with one override.
plugin "titles" {
  source = "builtin:titles"
  config = { overrides = { "clock__current_time" = "What time is it?" } }
}

# Result shaping: mask credentials, cap long results, and give JSON text
# results a structuredContent twin.
plugin "redact" {
  source = "builtin:redact"
}

plugin "truncate" {
  source = "builtin:truncate"
  config = { max_chars = 20000 }
}

plugin "json-results" {
  source = "builtin:json_results"
}

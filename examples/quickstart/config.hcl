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

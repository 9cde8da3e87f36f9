# A client's view of the local mcphost, for the CLI: `mcphost tools` and
# `mcphost call` with this file connect to the running service over HTTP.
#
#   mcphost tools /usr/share/mcphost/client.hcl
#   mcphost call /usr/share/mcphost/client.hcl local__data__json_to_csv '{"json":"[{\"a\":1}]"}'

server "local" {
  transport = "streamable-http"
  url       = "http://127.0.0.1:7700/mcp"
}

# mcphost's default configuration, installed by the .deb at
# /etc/mcphost/config.hcl (kept as you changed it on upgrade). The
# reference is README.md's "Configuration"; check a change with
#
#   mcphost validate /etc/mcphost/config.hcl
#
# and apply it with `systemctl reload mcphost` (SIGHUP).
#
# Out of the box it serves one tool plugin, the example JSON/CSV converter,
# on loopback only, so that a fresh install answers a tools/call:
#
#   mcphost call /usr/share/mcphost/client.hcl local__data__json_to_csv '{"json":"[{\"a\":1}]"}'

listen {
  http = "127.0.0.1:7700"
}

runtime {
  # The service can write here (systemd's CacheDirectory).
  cache_dir = "/var/cache/mcphost"
}

# A tool plugin: sandboxed Wasm, no network, files or environment.
tools_plugin "data" {
  source = "/usr/share/mcphost/tools/jsoncsv.wasm"
}

# An upstream MCP server over HTTP:
#
# server "docs" {
#   transport = "streamable-http"
#   url       = "https://mcp.example.com/mcp"
# }
#
# One run as a process (the service's user must be able to run it; its
# home is /var/lib/mcphost):
#
# server "files" {
#   transport = "stdio"
#   command   = "/usr/local/bin/mcp-server-filesystem"
#   args      = ["/srv/shared"]
# }

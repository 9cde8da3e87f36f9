# mcphost managed while it runs: servers are added, changed, tested and
# removed through the admin API (or `mcphost servers ...`), and kept in a
# store, an SQLite file beside this config, across restarts. Run from the
# repository root:
#
#   export MCPHOST_ADMIN_KEY=$(openssl rand -hex 32)
#   export MCPHOST_STORE_KEY=$(head -c 32 /dev/urandom | base64)
#   go run ./cmd/mcphost run examples/live/config.hcl
#
# MCP clients connect to http://127.0.0.1:7700/mcp with the same key; the
# admin API answers on http://127.0.0.1:7701 (GET /openapi.json describes it).

listen {
  http = "127.0.0.1:7700"
  auth {
    key "operator" {
      value   = env("MCPHOST_ADMIN_KEY")
      subject = "operator"
      groups  = ["admins"]
    }
  }
}

admin {
  http = "127.0.0.1:7701"
}

store {
  # The default; for replicas sharing state: postgres = env("MCPHOST_STORE_URL")
  sqlite = "mcphost.db"
  # Seals env values, headers and client secrets of stored servers.
  key = env("MCPHOST_STORE_KEY")
}

# Servers of this file are read-only through the API; the file stays where
# an operator reads what always runs.
server "clock" {
  command         = "go"
  args            = ["run", "./examples/servers/clock"]
  connect_timeout = "120s"
}

# Every tools/call as a JSON line with each policy's decision, kept in the
# store for a week (GET /v1/audit, `mcphost audit tail --follow`, the web
# console) and written to audit.jsonl beside this file (docs/audit.md).
audit {
  file = "audit.jsonl"
}

# A server behind OAuth 2.1 (the MCP authorization spec) served by mcphost:
# GitHub's hosted MCP server. Register an OAuth app at
# https://github.com/settings/developers with the callback URL
# http://127.0.0.1:7700/oauth/callback, then, from the repository root:
#
#   export GH_CLIENT_ID=... GH_SECRET=...
#   go run ./cmd/mcphost auth login github examples/oauth/config.hcl   # or let `run` ask
#   go run ./cmd/mcphost run examples/oauth/config.hcl
#
# Servers whose authorization server supports dynamic client registration
# need no client_id at all.

listen {
  http = "127.0.0.1:7700"
}

server "github" {
  transport = "streamable-http"
  url       = "https://api.githubcopilot.com/mcp/"
  oauth {
    mode          = "shared"
    client_id     = env("GH_CLIENT_ID")
    client_secret = env("GH_SECRET")
    scopes        = ["repo", "read:org"]
  }
}

# The grant (access and refresh token) is kept here, 0600; give a key to
# seal it: key = env("MCPHOST_GRANTS_KEY").
grants {
  file = "mcphost-grants.json"
}

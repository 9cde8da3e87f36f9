# GitHub's hosted MCP server behind mcphost, each caller with their own
# GitHub account (oauth mode "per_user"). Register an OAuth app at
# https://github.com/settings/developers with the callback URL
# http://127.0.0.1:7700/oauth/callback, then, from the repository root:
#
#   export GH_CLIENT_ID=... GH_SECRET=... ALICE_KEY=$(openssl rand -hex 16) BOB_KEY=$(openssl rand -hex 16)
#   go run ./cmd/mcphost auth login github examples/oauth/per_user.hcl   # the gateway's login: lists the tools
#   go run ./cmd/mcphost run examples/oauth/per_user.hcl
#
# Alice and Bob connect to http://127.0.0.1:7700/mcp with their keys as
# bearer tokens. Each one's first call of a github__ tool gives them a
# login link (or, if their client takes URL elicitations, asks them to
# open it and goes on): mcphost's page asks for their own key before it
# sends them on to GitHub, so no one else can finish it for them. From
# then on their calls carry their own token.

listen {
  http = "127.0.0.1:7700"
  auth {
    key "alice" {
      value   = env("ALICE_KEY")
      subject = "alice"
    }
    key "bob" {
      value   = env("BOB_KEY")
      subject = "bob"
    }
  }
}

server "github" {
  transport = "streamable-http"
  url       = "https://api.githubcopilot.com/mcp/"
  oauth {
    mode          = "per_user"
    client_id     = env("GH_CLIENT_ID")
    client_secret = env("GH_SECRET")
    scopes        = ["repo", "read:org"]
  }
}

# The gateway's grant and every caller's, 0600; give a key to seal them:
# key = env("MCPHOST_GRANTS_KEY").
grants {
  file = "mcphost-grants.json"
}

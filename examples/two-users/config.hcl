# mcphost with two users: each presents their own key, and the policies give
# each what is theirs. Run from the repository root:
#
#   export ALICE_KEY=$(openssl rand -hex 32) BOB_KEY=$(openssl rand -hex 32)
#   go run ./cmd/mcphost run examples/two-users/config.hcl
#
# then connect with "Authorization: Bearer $ALICE_KEY" (or $BOB_KEY) to
# http://127.0.0.1:7700/mcp. alice (group eng) has the clock and the notes;
# bob (group support) only reads notes and sees no clock. Only alice, an
# admin, may read /status.

listen {
  http = "127.0.0.1:7700"
  auth {
    admin_groups = ["admins"]
    key "alice" {
      value      = env("ALICE_KEY")
      subject    = "alice"
      groups     = ["eng", "admins"]
      attributes = { team = "platform" }
    }
    key "bob" {
      value   = env("BOB_KEY")
      subject = "bob"
      groups  = ["support"]
    }
    # A third way in: OAuth 2.1 access tokens from your identity provider.
    # oauth {
    #   issuer   = "https://idp.example.com/realms/main"
    #   audience = "https://mcp.example.com/mcp"
    #   scopes   = ["mcp:tools"]
    # }
  }
}

server "clock" {
  command         = "go"
  args            = ["run", "./examples/servers/clock"]
  connect_timeout = "120s"
}

server "notes" {
  command         = "go"
  args            = ["run", "./examples/servers/notes", "-dir", "examples/quickstart/notes"]
  connect_timeout = "120s"
}

# Support sees notes only, and only reads them.
plugin "support-scope" {
  source = "builtin:allow"
  groups = ["support"]
  config = { tools = ["notes__list_notes", "notes__read_note", "notes__search_notes"] }
}

# Nobody but an admin deletes notes.
plugin "no-delete" {
  source = "builtin:deny"
  config = { tools = "notes__delete_note", except_groups = "admins" }
}

# A chat app's gateway: every user their own notes (a notes server per
# user, its directory named by the caller), a clock for everyone, interns
# who may not delete notes, and a budget of calls per user. Users are added
# while it runs, with `mcphost users` (docs/multi-user.md). Run from the
# repository root:
#
#   export MCPHOST_ADMIN_KEY=$(openssl rand -hex 32)
#   go run ./cmd/mcphost run examples/multi-user/config.hcl
#
# then add a user (the key is printed once):
#
#   go run ./cmd/mcphost users add alice --group staff \
#     --admin http://127.0.0.1:7701 --key "$MCPHOST_ADMIN_KEY"

listen {
  http = "127.0.0.1:7700"
  auth {
    admin_groups = ["admins"]
    # The operator's key, from the environment; users come from the store.
    key "ops" {
      value   = env("MCPHOST_ADMIN_KEY")
      subject = "ops"
      groups  = ["admins"]
    }
  }
}

admin {
  http = "127.0.0.1:7701"
}

store {
  sqlite = "multi-user.db"
}

# Each caller's own notes: ${caller.subject} makes the server per identity
# (sessions = "per_client"), so alice's notes are hers and bob never reads
# them. The server's own session, which lists the tools, uses an empty
# subject (notes/ itself).
server "notes" {
  command = "go"
  args    = ["run", "./examples/servers/notes", "-dir", "examples/multi-user/notes/${caller.subject}"]
  max_sessions = 32 # users with a notes process at once; idle ones are closed
}

server "clock" {
  command = "go"
  args    = ["run", "./examples/servers/clock"]
}

# Interns read and write notes but never delete one.
plugin "interns" {
  source = "builtin:deny"
  groups = ["interns"]
  config = { tools = "notes__delete_note" }
}

# Every user: 60 calls a minute, 4 at once. Interns: 200 calls a day besides.
quota "per-user" {
  calls      = 60
  window     = "1m"
  concurrent = 4
}

quota "interns-daily" {
  groups = ["interns"]
  calls  = 200
  window = "24h"
}

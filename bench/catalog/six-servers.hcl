# The six-server catalog of issue 35 and docs/BENCHMARKS.md ("Catalogs in
# tokens"): three npm reference servers, the go-sdk's conformance
# everything-server, and mcphost's clock and notes examples. BENCH is the
# directory where the npm packages are installed and the Go servers built:
#
#   BENCH=/tmp/mcpbench
#   (cd $BENCH && npm install @modelcontextprotocol/server-filesystem \
#     @modelcontextprotocol/server-memory @modelcontextprotocol/server-everything)
#   go build -o $BENCH/bin/everything-server github.com/modelcontextprotocol/go-sdk/conformance/everything-server
#   go build -o $BENCH/bin/clock ./examples/servers/clock
#   go build -o $BENCH/bin/notes ./examples/servers/notes
#   mkdir -p $BENCH/files $BENCH/notes
#   BENCH=$BENCH go run ./cmd/mcphost tools bench/catalog/six-servers.hcl --stats
#
# "Before policies" is the catalog as the servers list it; "after" is it
# under builtin:compact (its defaults).

server "filesystem" {
  command = "${env("BENCH")}/node_modules/.bin/mcp-server-filesystem"
  args    = ["${env("BENCH")}/files"]
}

server "memory" {
  command = "${env("BENCH")}/node_modules/.bin/mcp-server-memory"
  env     = { MEMORY_FILE_PATH = "${env("BENCH")}/memory.jsonl" }
}

server "everything" {
  command = "${env("BENCH")}/node_modules/.bin/mcp-server-everything"
}

server "goeverything" {
  command = "${env("BENCH")}/bin/everything-server"
}

server "clock" {
  command = "${env("BENCH")}/bin/clock"
}

server "notes" {
  command = "${env("BENCH")}/bin/notes"
  args    = ["-dir", "${env("BENCH")}/notes"]
}

plugin "compact" {
  source = "builtin:compact"
}

# What a team's IDE needs: files and notes, nothing that writes files.
toolset "ide" {
  servers = ["filesystem", "notes"]
  exclude = ["write_*", "edit_*", "move_*", "create_directory", "delete_*"]
}

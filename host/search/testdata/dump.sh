#!/bin/sh
# dump.sh writes catalog.json beside it: the tools/list of six real MCP
# servers as mcphost names them (`mcphost tools --json`), the catalog the
# labelled queries in queries.json are judged against. Run it from the
# repository root, once, when a server's version below changes:
#
#	sh host/search/testdata/dump.sh
#
# It needs Go, node and npx (the npm registry); nothing reads the network at run
# time or in tests.
set -eu
out=$(cd "$(dirname "$0")" && pwd)/catalog.json
npmver=2026.8.31 # @modelcontextprotocol/server-{filesystem,memory,everything}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go build -o "$dir/mcphost" ./cmd/mcphost
go build -o "$dir/clock" ./examples/servers/clock
go build -o "$dir/notes" ./examples/servers/notes
go build -o "$dir/everything-go" github.com/modelcontextprotocol/go-sdk/examples/server/everything
mkdir "$dir/files" "$dir/notesdir"
cat >"$dir/dump.hcl" <<HCL
server "filesystem" {
  command = "npx"
  args    = ["-y", "@modelcontextprotocol/server-filesystem@$npmver", "$dir/files"]
  connect_timeout = "120s"
}
server "memory" {
  command = "npx"
  args    = ["-y", "@modelcontextprotocol/server-memory@$npmver"]
  env     = { MEMORY_FILE_PATH = "$dir/memory.jsonl" }
  connect_timeout = "120s"
}
server "everything" {
  command = "npx"
  args    = ["-y", "@modelcontextprotocol/server-everything@$npmver"]
  connect_timeout = "120s"
}
server "gosdk" {
  command = "$dir/everything-go"
}
server "clock" {
  command = "$dir/clock"
}
server "notes" {
  command = "$dir/notes"
  args    = ["-dir", "$dir/notesdir"]
}
HCL
"$dir/mcphost" tools --json "$dir/dump.hcl" >"$dir/tools.json"
# Only the tools: the servers' part holds pids and times.
node -e 'const fs = require("fs"); const c = JSON.parse(fs.readFileSync(process.argv[1])); fs.writeFileSync(process.argv[2], JSON.stringify({tools: c.tools}, null, 2) + "\n")' "$dir/tools.json" "$out"
echo "wrote $out"

#!/usr/bin/env bash
# A/B run for docs/BENCHMARKS.md: mcphost built against the go-sdk as pinned
# (A) and against the go-sdk with bench/go-sdk-json.patch applied (B), both
# from the committed tree (HEAD), measured in the same rounds by the
# comparison (tools/call and tools/list, no npm gateways, no mcp-go gateway).
#
#   bash .ci/bench-sdk-ab.sh [compare flags, e.g. -rounds 3]
#
# The patch parses JSON-RPC messages in place instead of through a
# json.Decoder (which allocates a 32 KiB buffer per message) and stops
# re-encoding already-encoded params and results. Nothing outside a
# temporary directory changes.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sdk=$(go list -m -f '{{.Dir}}' github.com/modelcontextprotocol/go-sdk)
cp -r "$sdk" "$tmp/go-sdk"
chmod -R u+w "$tmp/go-sdk"
patch -s -d "$tmp/go-sdk" -p1 < bench/go-sdk-json.patch

mkdir "$tmp/src"
git archive HEAD | tar -x -C "$tmp/src"
(
	cd "$tmp/src"
	go build -o "$tmp/mcphost-a" ./cmd/mcphost
	go mod edit -replace "github.com/modelcontextprotocol/go-sdk=$tmp/go-sdk"
	go build -o "$tmp/mcphost-b" ./cmd/mcphost
)
go run ./internal/bench/compare -sections calls,list -no-npm -no-mcpgo -plugins-config /dev/null \
	-mcphost "$tmp/mcphost-a" -mcphost-b "$tmp/mcphost-b" "$@"

#!/usr/bin/env bash
# The MCP conformance suite against mcphost: the go-sdk everything-server
# directly (the baseline), then mcphost proxying it with prefix = "never"
# over each upstream transport (stdio, SSE, streamable HTTP), then in the
# default namespaced mode with the expected failures listed in
# .ci/conformance/expected-failures/namespaced.txt.
#
# Prints one line per scenario, a "N passed, M failed" line per run, and a
# closing "conformance: N passed, M failed" over every required run. Exits
# non-zero if any required scenario fails.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
source .ci/conformance.sh
trap conformance_cleanup EXIT

conformance_setup >/dev/null || exit 1
bin="$CONFORMANCE_CACHE/bin"
mkdir -p "$bin" "$CONFORMANCE_RESULTS"
go build -o "$bin/mcphost" ./cmd/mcphost || exit 1
go build -o "$bin/ssebridge" ./host/testdata/ssebridge || exit 1

total_pass=0 total_fail=0 failed_runs=()
# run LABEL URL [EXPECTED_FAILURES [PENDING_EXPECTED_FAILURES]]: a required
# run of the active suite, then the pending suite, which must pass where the
# direct server passes it.
run() {
  local label=$1 url=$2 xfail=${3:-} pxfail=${4:-${3:-}} out rc
  out=$(conformance_run "$url" "$label" $xfail)
  rc=$?
  echo "$out"
  local counts
  counts=$(echo "$out" | tail -n 1)
  if [[ $counts =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
    total_pass=$((total_pass + BASH_REMATCH[1]))
    total_fail=$((total_fail + BASH_REMATCH[2]))
  fi
  [ "$rc" -eq 0 ] || failed_runs+=("$label")
  out=$(CONFORMANCE_SUITE=pending conformance_run "$url" "$label-pending" $pxfail)
  rc=$?
  echo "$out"
  [ "$rc" -eq 0 ] || failed_runs+=("$label-pending")
}

# gateway LABEL CONFIG: start mcphost on a free port and run the suite through it.
gateway() {
  local label=$1 config=$2 xfail=${3:-} pxfail=${4:-${3:-}} port
  port=$(conformance_free_port)
  conformance_spawn "$CONFORMANCE_RESULTS/$label.log" "$bin/mcphost" run "$config" --http "127.0.0.1:$port" --no-watch
  if ! conformance_wait_port "$port" 60; then
    echo "[$label] mcphost did not start; its log:" >&2
    cat "$CONFORMANCE_RESULTS/$label.log" >&2
    failed_runs+=("$label")
    return
  fi
  run "$label" "http://127.0.0.1:$port/mcp" "$xfail" "$pxfail"
}

cfgdir=$(mktemp -d)
trap 'conformance_cleanup; rm -rf "$cfgdir"' EXIT

# 1. The baseline: the everything-server itself over streamable HTTP.
conformance_start_everything >/dev/null || exit 1
run direct "$EVERYTHING_URL"

# 2. stdio upstream.
cat > "$cfgdir/stdio.hcl" <<EOC
server "everything" {
  command = "$EVERYTHING_SERVER"
}
tools {
  prefix = "never"
}
EOC
gateway mcphost-stdio "$cfgdir/stdio.hcl"

# 3. streamable HTTP upstream (the everything-server started above).
cat > "$cfgdir/http.hcl" <<EOC
server "everything" {
  transport = "streamable-http"
  url       = "$EVERYTHING_URL"
}
tools {
  prefix = "never"
}
EOC
gateway mcphost-http "$cfgdir/http.hcl" "" "$repo/.ci/conformance/expected-failures/http-pending.txt"

# 4. SSE upstream: the everything-server speaks only stdio and streamable
# HTTP, so a byte-for-byte SSE bridge stands in front of its stdio mode.
bport=$(conformance_free_port)
conformance_spawn "$CONFORMANCE_RESULTS/ssebridge.log" "$bin/ssebridge" -http "127.0.0.1:$bport" -- "$EVERYTHING_SERVER"
conformance_wait_port "$bport" 30 || exit 1
cat > "$cfgdir/sse.hcl" <<EOC
server "everything" {
  transport = "sse"
  url       = "http://127.0.0.1:$bport/"
}
tools {
  prefix = "never"
}
EOC
gateway mcphost-sse "$cfgdir/sse.hcl"

# 5. The default namespaced mode: scenarios that call fixed tool or prompt
# names cannot find them under their prefixed names; they are listed, each
# with its reason, and everything else must pass.
cat > "$cfgdir/namespaced.hcl" <<EOC
server "everything" {
  command = "$EVERYTHING_SERVER"
}
EOC
gateway mcphost-namespaced "$cfgdir/namespaced.hcl" "$repo/.ci/conformance/expected-failures/namespaced.txt"

echo
if [ ${#failed_runs[@]} -gt 0 ]; then
  echo "conformance runs with failures: ${failed_runs[*]}"
fi
echo "conformance: $total_pass passed, $total_fail failed"
[ ${#failed_runs[@]} -eq 0 ]

#!/usr/bin/env bash
# The MCP conformance suite's client auth scenarios, with mcphost as the
# OAuth client of each scenario's server (.ci/conformance/oauth-client.sh):
# the auth suite, the 2025-03-26 back-compat, draft and extension
# scenarios. A scenario passes when the suite says OVERALL: PASSED;
# expected failures, each with its reason, are in
# .ci/conformance/expected-failures/oauth-client.txt. Exits non-zero on an
# unexpected failure, or on an expected failure that now passes.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
source .ci/conformance.sh
trap conformance_cleanup EXIT

conformance_setup >/dev/null || exit 1
bin="$CONFORMANCE_CACHE/bin"
mkdir -p "$bin" "$CONFORMANCE_RESULTS/oauth-client"
go build -o "$bin/mcphost" ./cmd/mcphost || exit 1
export MCPHOST_BIN=$bin/mcphost CONFORMANCE_NODE
export PATH=$(dirname "$CONFORMANCE_NODE"):$PATH

expected=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' .ci/conformance/expected-failures/oauth-client.txt | awk '{print $1}')
scenarios=$("$CONFORMANCE_NODE" "$CONFORMANCE_CLI" list --client | sed -n 's/^ *- \(auth\/[^ ]*\).*/\1/p')
pass=0 fail=0 bad=()
for s in $scenarios; do
	log="$CONFORMANCE_RESULTS/oauth-client/${s//\//_}.log"
	"$CONFORMANCE_NODE" "$CONFORMANCE_CLI" client --command "bash $repo/.ci/conformance/oauth-client.sh" --scenario "$s" --timeout 60000 >"$log" 2>&1
	if grep -q "OVERALL: PASSED" "$log"; then result=pass; else result=fail; fi
	if grep -qx "$s" <<<"$expected"; then
		if [ $result = pass ]; then
			echo "$s: PASSED but listed as an expected failure; remove it from the list"
			bad+=("$s")
		else
			echo "$s: failed (expected)"
		fi
		fail=$((fail + 1))
		continue
	fi
	if [ $result = pass ]; then
		echo "$s: passed"
		pass=$((pass + 1))
	else
		echo "$s: FAILED; its log: $log"
		sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E "FAILURE|WARNING|Stderr|mcphost" | head -20
		fail=$((fail + 1))
		bad+=("$s")
	fi
done
echo "oauth client conformance: $pass passed, $fail failed (${#bad[@]} unexpected)"
[ ${#bad[@]} -eq 0 ]

#!/usr/bin/env bash
# The MCP conformance suite (@modelcontextprotocol/conformance, pinned in
# .ci/conformance/package-lock.json) as a CI step: it installs what it needs
# into a repo-local cache, runs the server scenarios against a streamable
# HTTP URL, and prints one line per scenario and a closing count.
#
# Usage, as a command:
#   bash .ci/conformance.sh [self-test]          everything-server direct over streamable HTTP:
#                                                pending scenarios (informational), then the
#                                                active ones (required)
#   bash .ci/conformance.sh run URL LABEL [EXPECTED_FAILURES]
#                                                run the suite against URL
#   bash .ci/conformance.sh setup                install only; prints the paths it set
#   bash .ci/conformance.sh port                 print a free loopback TCP port
#
# Usage, as a library (this is how .ci/run can drive mcphost in front of the
# everything-server):
#   source .ci/conformance.sh
#   trap conformance_cleanup EXIT
#   conformance_setup                            # sets CONFORMANCE_NODE, CONFORMANCE_CLI,
#                                                # EVERYTHING_SERVER (the binary; no flags = stdio)
#   conformance_start_everything                 # sets EVERYTHING_URL, EVERYTHING_PID
#   port=$(conformance_free_port)
#   conformance_spawn "$CONFORMANCE_RESULTS/mcphost.log" ./mcphost run cfg.hcl   # sets SPAWNED_PID
#   conformance_wait_port "$port" 30
#   conformance_run "http://127.0.0.1:$port/mcp" mcphost-stdio .ci/conformance/expected-failures/stdio.txt
# Sourcing sets no options and no traps of its own; conformance_cleanup kills,
# by PID, exactly the processes started through conformance_spawn.
#
# What conformance_run prints on stdout (progress goes to stderr):
#   [LABEL] PASS  scenario (n/m checks[, k warnings])
#   [LABEL] FAIL  scenario (n/m checks; failing-check-id: message)
#   [LABEL] XFAIL scenario (expected: reason)          listed in EXPECTED_FAILURES and failed
#   [LABEL] XPASS scenario (listed as expected to fail: ...)   listed but passed
#   [LABEL] K expected failures not counted             when K > 0
#   N passed, M failed                                  always the last line
# It returns non-zero when a scenario that is not listed fails, or when no
# scenario ran. XPASS only warns, unless CONFORMANCE_STRICT_XPASS=1.
# With CONFORMANCE_INFORMATIONAL=1 the closing line is instead
# "[LABEL] informational: N of T scenarios pass" and it always returns 0.
#
# EXPECTED_FAILURES is a text file: one scenario name per line, then
# "# reason"; blank lines and lines that are only a comment are skipped.
#
# Environment:
#   CONFORMANCE_SUITE          active (default; what must pass), pending, or all
#   CONFORMANCE_SCENARIO       run this one scenario instead of a suite
#   CONFORMANCE_INFORMATIONAL  1: report, never fail
#   CONFORMANCE_STRICT_XPASS   1: an expected failure that passes fails the run
#   CONFORMANCE_TIMEOUT        seconds one CLI run may take (default 300)
#   CONFORMANCE_VERBOSE        1: copy the CLI's own output to stderr
#   CONFORMANCE_PACKAGE        the directory of the package.json and lock to install
#                              (default .ci/conformance; another, DIR, installs into
#                              $CONFORMANCE_CACHE/conformance-$(basename DIR))
#   CONFORMANCE_CACHE          install cache (default .ci/.cache, gitignored)
#   CONFORMANCE_RESULTS        logs and checks.json files (default $CONFORMANCE_CACHE/results)
#   EVERYTHING_SERVER_VERSION  go-sdk version of the everything-server (default v1.8.0)
#   MCPHOST_NODE_VERSION       see .ci/install-node.sh

_conf_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CONFORMANCE_CACHE=${CONFORMANCE_CACHE:-$_conf_repo/.ci/.cache}
CONFORMANCE_RESULTS=${CONFORMANCE_RESULTS:-$CONFORMANCE_CACHE/results}
EVERYTHING_SERVER_VERSION=${EVERYTHING_SERVER_VERSION:-v1.8.0}
_conformance_pids=()

conformance_log() { echo "conformance: $*" >&2; }

# conformance_setup installs Node 22, the pinned conformance CLI and the
# go-sdk everything-server, each only when missing or out of date, and sets
# CONFORMANCE_NODE, CONFORMANCE_CLI and EVERYTHING_SERVER.
conformance_setup() {
	local start=$SECONDS
	CONFORMANCE_NODE=$(bash "$_conf_repo/.ci/install-node.sh") || return 1

	local src=${CONFORMANCE_PACKAGE:-$_conf_repo/.ci/conformance} dir=$CONFORMANCE_CACHE/conformance
	if [[ $src != "$_conf_repo/.ci/conformance" ]]; then
		dir=$CONFORMANCE_CACHE/conformance-$(basename "$src")
	fi
	CONFORMANCE_CLI=$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js
	if [[ ! -f $CONFORMANCE_CLI ]] || ! cmp -s "$src/package-lock.json" "$dir/.installed-lock"; then
		conformance_log "installing the conformance CLI from $src/package-lock.json"
		mkdir -p "$dir" || return 1
		cp "$src/package.json" "$src/package-lock.json" "$dir/" || return 1
		(cd "$dir" && PATH=$(dirname "$CONFORMANCE_NODE"):$PATH \
			npm ci --no-audit --no-fund --no-update-notifier --loglevel=error </dev/null >&2) || return 1
		cp "$src/package-lock.json" "$dir/.installed-lock" || return 1
	fi

	local bin=$CONFORMANCE_CACHE/bin
	EVERYTHING_SERVER=$bin/everything-server
	if [[ ! -x $EVERYTHING_SERVER || "$(cat "$bin/.everything-server.version" 2>/dev/null)" != "$EVERYTHING_SERVER_VERSION" ]]; then
		conformance_log "go install everything-server@$EVERYTHING_SERVER_VERSION into $bin"
		mkdir -p "$bin" || return 1
		# pkg@version builds outside this module: go.mod is not consulted or touched.
		(cd "$bin" && GOBIN=$bin GOFLAGS='' go install \
			"github.com/modelcontextprotocol/go-sdk/conformance/everything-server@$EVERYTHING_SERVER_VERSION" </dev/null >&2) || return 1
		echo "$EVERYTHING_SERVER_VERSION" >"$bin/.everything-server.version"
	fi
	mkdir -p "$CONFORMANCE_RESULTS" || return 1
	export CONFORMANCE_NODE CONFORMANCE_CLI EVERYTHING_SERVER
	conformance_log "ready in $((SECONDS - start))s: node $("$CONFORMANCE_NODE" --version), conformance $(_conformance_cli_version), everything-server $EVERYTHING_SERVER_VERSION"
}

_conformance_cli_version() {
	"$CONFORMANCE_NODE" -p "require('$(dirname "$CONFORMANCE_CLI")/../package.json').version" 2>/dev/null
}

# conformance_free_port prints a TCP port that is free on 127.0.0.1 now.
conformance_free_port() {
	local node=${CONFORMANCE_NODE:-node}
	"$node" -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# conformance_wait_port PORT [SECONDS] waits until something accepts
# connections on 127.0.0.1:PORT (default 30s).
conformance_wait_port() {
	local port=$1 deadline=$((SECONDS + ${2:-30}))
	while ((SECONDS < deadline)); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	conformance_log "nothing listens on 127.0.0.1:$port after ${2:-30}s"
	return 1
}

# conformance_spawn LOGFILE COMMAND [ARGS...] starts a command in the
# background with its output in LOGFILE and stdin from /dev/null, remembers
# its PID for conformance_cleanup, and sets SPAWNED_PID.
conformance_spawn() {
	local logfile=$1
	shift
	mkdir -p "$(dirname "$logfile")"
	"$@" </dev/null >"$logfile" 2>&1 &
	SPAWNED_PID=$!
	_conformance_pids+=("$SPAWNED_PID")
}

# conformance_cleanup stops every process started by conformance_spawn: TERM,
# then KILL for any still running after 5 seconds.
conformance_cleanup() {
	local pid alive=() i
	for pid in "${_conformance_pids[@]}"; do
		if kill -0 "$pid" 2>/dev/null; then
			kill -TERM "$pid" 2>/dev/null && alive+=("$pid")
		fi
	done
	for ((i = 0; i < 50 && ${#alive[@]} > 0; i++)); do
		local still=()
		for pid in "${alive[@]}"; do
			kill -0 "$pid" 2>/dev/null && still+=("$pid")
		done
		alive=("${still[@]}")
		((${#alive[@]} > 0)) && sleep 0.1
	done
	for pid in "${alive[@]}"; do
		conformance_log "process $pid ignored TERM: killing it"
		kill -KILL "$pid" 2>/dev/null
	done
	for pid in "${_conformance_pids[@]}"; do
		wait "$pid" 2>/dev/null
	done
	_conformance_pids=()
}

# conformance_start_everything [PORT] starts the everything-server on
# streamable HTTP (stateful) and waits for it; sets EVERYTHING_URL and
# EVERYTHING_PID.
# shellcheck disable=SC2120 # the port is optional; library callers may pass one
conformance_start_everything() {
	local port=${1:-$(conformance_free_port)}
	conformance_spawn "$CONFORMANCE_RESULTS/everything-server-$port.log" \
		"$EVERYTHING_SERVER" "-http=127.0.0.1:$port" -stateless=false
	EVERYTHING_PID=$SPAWNED_PID
	if ! conformance_wait_port "$port" 30; then
		cat "$CONFORMANCE_RESULTS/everything-server-$port.log" >&2
		return 1
	fi
	EVERYTHING_URL=http://127.0.0.1:$port/mcp
	conformance_log "everything-server (pid $EVERYTHING_PID) at $EVERYTHING_URL"
}

# conformance_run URL LABEL [EXPECTED_FAILURES] runs the suite against URL
# and reports; see the header for the output and the environment.
conformance_run() {
	if (($# < 2 || $# > 3)); then
		conformance_log "usage: conformance_run URL LABEL [EXPECTED_FAILURES]"
		return 2
	fi
	local url=$1 label=$2 expected=${3:-}
	if [[ ! $label =~ ^[A-Za-z0-9._-]+$ ]]; then
		conformance_log "label must be letters, digits, '.', '_' or '-': $label"
		return 2
	fi
	if [[ -n $expected && ! -f $expected ]]; then
		conformance_log "no expected-failures file $expected"
		return 2
	fi
	local suite=${CONFORMANCE_SUITE:-active}
	local out=$CONFORMANCE_RESULTS/$label-${CONFORMANCE_SCENARIO:-$suite}
	rm -rf "$out" && mkdir -p "$out" || return 1

	local args=(server --url "$url" -o "$out/results")
	if [[ -n ${CONFORMANCE_SCENARIO:-} ]]; then
		args+=(--scenario "$CONFORMANCE_SCENARIO")
	else
		args+=(--suite "$suite")
	fi
	conformance_log "[$label] ${CONFORMANCE_SCENARIO:-suite $suite} against $url"
	local start=$SECONDS cli_rc=0
	timeout -k 10 "${CONFORMANCE_TIMEOUT:-300}" "$CONFORMANCE_NODE" "$CONFORMANCE_CLI" "${args[@]}" \
		</dev/null >"$out/cli.log" 2>&1 || cli_rc=$?
	if [[ ${CONFORMANCE_VERBOSE:-} == 1 ]]; then
		cat "$out/cli.log" >&2
	fi
	if ((cli_rc == 124 || cli_rc == 137)); then
		conformance_log "[$label] the conformance CLI timed out after ${CONFORMANCE_TIMEOUT:-300}s"
	fi

	local report=(--log "$out/cli.log" --results "$out/results" --label "$label" --suite "$suite")
	[[ -n $expected ]] && report+=(--expected "$expected")
	[[ -n ${CONFORMANCE_SCENARIO:-} ]] && report+=(--scenario "$CONFORMANCE_SCENARIO")
	[[ ${CONFORMANCE_INFORMATIONAL:-} == 1 ]] && report+=(--informational)
	[[ ${CONFORMANCE_STRICT_XPASS:-} == 1 ]] && report+=(--strict-xpass)
	local rc=0
	"$CONFORMANCE_NODE" "$_conf_repo/.ci/conformance/report.mjs" "${report[@]}" || rc=$?
	if ((cli_rc == 124 || cli_rc == 137)) && [[ ${CONFORMANCE_INFORMATIONAL:-} != 1 ]]; then
		rc=1
	fi
	if ((rc != 0)); then
		conformance_log "[$label] failed after $((SECONDS - start))s; the CLI's output is in $out/cli.log, each scenario's checks in $out/results/"
	else
		conformance_log "[$label] done in $((SECONDS - start))s"
	fi
	return "$rc"
}

# conformance_self_test runs the suite against the everything-server itself,
# which passes every active scenario: it proves the harness, not mcphost.
conformance_self_test() {
	conformance_setup || return 1
	conformance_start_everything || return 1
	CONFORMANCE_SUITE=pending CONFORMANCE_INFORMATIONAL=1 conformance_run "$EVERYTHING_URL" everything-pending
	local rc=0
	CONFORMANCE_SUITE=active conformance_run "$EVERYTHING_URL" everything || rc=$?
	return "$rc"
}

_conformance_main() {
	set -uo pipefail
	trap conformance_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	local cmd=${1:-self-test}
	(($# > 0)) && shift
	case $cmd in
	self-test | everything)
		conformance_self_test
		;;
	run)
		conformance_setup || return 1
		conformance_run "$@"
		;;
	setup)
		conformance_setup || return 1
		echo "CONFORMANCE_NODE=$CONFORMANCE_NODE"
		echo "CONFORMANCE_CLI=$CONFORMANCE_CLI"
		echo "EVERYTHING_SERVER=$EVERYTHING_SERVER"
		echo "CONFORMANCE_RESULTS=$CONFORMANCE_RESULTS"
		;;
	port)
		CONFORMANCE_NODE=$(bash "$_conf_repo/.ci/install-node.sh") || return 1
		conformance_free_port
		;;
	-h | --help | help)
		sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
		;;
	*)
		conformance_log "unknown command $cmd (try --help)"
		return 2
		;;
	esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	_conformance_main "$@"
	exit $?
fi

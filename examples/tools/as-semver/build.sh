#!/bin/sh
# Rebuilds semver.wasm from assembly/ with the pinned toolchain
# (package-lock.json): needs Node.js 20+ and npm. The result is committed,
# so mcphost's tests run it without npm.
set -eu
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
npm run build
cp build/semver.wasm semver.wasm
echo "built semver.wasm ($(wc -c < semver.wasm) bytes)"

#!/bin/sh
# build.sh QUICKJS_SRC: builds quickjs.wasm, the code-mode guest: QuickJS
# (Fabrice Bellard's, at the commit in quickjs.version) with glue.c,
# for wasm32-wasi, with Debian bookworm's clang 14, lld, wasi-libc and
# libclang-rt-14-dev-wasm32:
#   apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32
# QUICKJS_SRC is a checkout of https://github.com/bellard/quickjs at
# that commit. The result is committed; CI does not rebuild it.
set -eu
src=${1:?usage: build.sh QUICKJS_SRC}
here=$(cd "$(dirname "$0")" && pwd)
want=$(sed -n 's/^commit //p' "$here/quickjs.version")
if [ -d "$src/.git" ]; then
	have=$(git -C "$src" rev-parse HEAD)
	[ "$have" = "$want" ] || { echo "build.sh: $src is at $have, want $want" >&2; exit 1; }
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$src"/quickjs.c "$src"/quickjs.h "$src"/quickjs-atom.h "$src"/quickjs-opcode.h \
	"$src"/libregexp.c "$src"/libregexp.h "$src"/libregexp-opcode.h \
	"$src"/libunicode.c "$src"/libunicode.h "$src"/libunicode-table.h \
	"$src"/cutils.c "$src"/cutils.h "$src"/dtoa.c "$src"/dtoa.h "$src"/list.h "$tmp"/
# WASI has no threads: Atomics (and its pthread use) goes, as under
# Emscripten.
grep -q '^#define CONFIG_ATOMICS$' "$tmp"/quickjs.c
sed -i 's/^#define CONFIG_ATOMICS$/#ifndef __wasi__\n#define CONFIG_ATOMICS\n#endif/' "$tmp"/quickjs.c
# wasi-libc's malloc does not say a block's usable size (QuickJS then
# counts what it asked for), and dtoa.c includes setjmp.h without using it.
sed -i 's/^#elif defined(__EMSCRIPTEN__)$/#elif defined(__EMSCRIPTEN__) || defined(__wasi__)/' "$tmp"/quickjs.c
sed -i 's/^#include <setjmp.h>$//' "$tmp"/dtoa.c
# QuickJS's stack check reads the frame address, which in WebAssembly is
# not where the shadow stack stands: read the stack pointer itself.
sed -i 's|^    return (uintptr_t)__builtin_frame_address(0);$|    uintptr_t sp; __asm__ volatile("global.get __stack_pointer\\n\\tlocal.set %0" : "=r"(sp)); return sp;|' "$tmp"/quickjs.c
grep -q 'global.get __stack_pointer' "$tmp"/quickjs.c
cd "$tmp"
clang --target=wasm32-wasi -O2 -g0 -D_GNU_SOURCE -DCONFIG_VERSION="\"$(cat "$src"/VERSION)\"" \
	-mexec-model=reactor -nostartfiles -Wl,--no-entry \
	-Wl,--stack-first -Wl,-z,stack-size=1048576 -Wl,--strip-all \
	-Wno-unused-but-set-variable -Wno-unknown-warning-option \
	-I. -o "$here"/quickjs.wasm \
	quickjs.c libregexp.c libunicode.c cutils.c dtoa.c "$here"/glue.c

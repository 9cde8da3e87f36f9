// Package plugins loads, checks, pools, limits and hot-swaps mcphost's Wasm
// policy plugins. It knows the ABI (package abi), not MCP sessions.
//
// # Lifecycle
//
// A Runtime holds the engine configuration (wazero with an on-disk
// compilation cache; guests rewritten so that every loop, call and bulk
// memory instruction counts towards a check of the context, internal/wasmrewrite,
// or guarded by wazero where the rewriter cannot, internal/extismhost, so a guest is
// stopped by its timeout, whatever its control flow, instead of freezing
// the host) and the compiled modules, shared by content: plugins whose .wasm has the same sha256 cost
// one compile and one copy of machine code, which is how the built-in
// policies, all in one module, stay cheap.
//
// Runtime.Load turns a Spec into a Plugin: it reads the source (a file or
// "builtin:NAME"), verifies the optional sha256, compiles (or reuses a
// compile), instantiates one instance, checks that mcphost_describe is
// exported, that the describe output is valid JSON naming a supported major
// ABI version and that every hook it names is exported, then warms a pool of
// Spec.Instances instances. Any failure is a *LoadError naming the plugin,
// its source and the exact cause.
//
// Plugin.Call runs one hook on one instance from the pool (an Extism
// instance is never used by two calls at once) under the spec's timeout. An
// instance that trapped, timed out or exited is thrown away and replaced in
// the background; a plugin's own error (non-zero return) keeps it. After
// CrashLimit consecutive crashes the plugin fails fast for a growing
// backoff.
//
// A Chain is one generation of plugins run in order; it implements
// host.Policy, validates every plugin output and applies each plugin's
// on_error mode. A Manager holds the current Chain and swaps in new
// generations built off to the side; calls in flight finish on the
// generation they started with.
//
// # Sandbox
//
// Guests get WASI with clocks and randomness only: no filesystem,
// environment or network unless the spec grants them (AllowedPaths, Env,
// AllowedHosts for Extism HTTP). A path grant is an os.Root (internal/rootfs):
// nothing the guest names, symlinks included, resolves outside it, and an
// instance holds at most 256 files open through its grants. HTTP
// (internal/extismhost) checks every redirect against AllowedHosts and every
// dialled address, after DNS, against loopback, private and other
// non-public ranges, which only an entry naming the address opens. The
// guest's linear memory is capped at
// Spec.Memory through a wazero memory allocator, so plugins sharing a
// compiled module can have different caps; the Extism memory that holds
// input, output and the blocks a guest allocates through the host is capped
// at Spec.Memory too.
//
// # Engine
//
// The host side of the Extism ABI (the extism:host/env imports: kernel
// memory, input and output, errors, config, vars, logging, HTTP) is
// implemented in Go on raw wazero (engine_native.go, internal/extismhost), with the
// signatures and semantics of Extism's go-sdk v1.7.1, so modules built with
// any Extism PDK run unchanged. The go-sdk itself costs tens of
// microseconds and 130 KB per call; its engine is kept behind the
// mcphost_extism build tag for comparison benchmarks. What a guest writes to stdout
// and stderr, and its Extism logs, go to the runtime's logger named after
// the plugin.
//
// # Errors
//
// Callers branch with errors.Is and errors.As: ErrTimeout, ErrTrap and
// ErrMemoryLimit (*TrapError), *PluginError, ErrOutputTooLarge,
// ErrInvalidOutput, ErrUnavailable, and at load ErrSpec, ErrSource,
// ErrChecksum, ErrCompile, ErrInstantiate, ErrMissingExport, ErrABIVersion,
// ErrInvalidDescribe.
package plugins

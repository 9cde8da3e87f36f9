// Package extismhost is the host side of the Extism ABI on raw wazero: the
// extism:host/env functions (a kernel of memory blocks in a Go arena, config
// and vars, logging, http_request under allowed_hosts), wazero's WASI with
// path_open's EMFILE restored, and the guard that stops a guest whose call's
// context is done.
//
// Guests see the imports, signatures and semantics of Extism's go-sdk
// v1.7.1, so modules built with any Extism PDK run unchanged; package
// plugins owns everything above (pools, timeouts, crash accounting).
package extismhost

import (
	"context"
	"math"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
)

// ModuleName is the import module of the Extism host functions.
const ModuleName = "extism:host/env"

// Env is what one plugin's instances share.
type Env struct {
	Config   map[string]string // what config_get reads
	Log      hclog.Logger      // where log_* writes; nil drops guest logs
	LogLevel int32             // what get_log_level answers; lower levels are dropped (LogLevel)
	HTTP     *HTTP             // allowed_hosts for http_request; nil refuses every request

	// The grants of a tool plugin's host functions (tools.go); off when
	// nil or false.
	KV        KV   // the plugin's key-value store for kv_get and kv_set
	Progress  bool // progress may reach the calling client
	ClientLog bool // log may reach the calling client
}

// Budget is the memory cap an instance's kernel shares with its linear
// memory.
type Budget interface {
	Limit() uint64 // bytes the kernel's arena may reach
	Refuse()       // notes an allocation the cap refused
}

// Instantiate defines WASI and the Extism host functions in r, for the
// guests r will compile.
func Instantiate(ctx context.Context, r wazero.Runtime) error {
	if err := instantiateWASI(ctx, r); err != nil {
		return err
	}
	if _, err := instantiateExtismEnv(ctx, r); err != nil {
		return err
	}
	_, err := instantiateToolEnv(ctx, r)
	return err
}

// LogLevel is the Extism level (0 trace .. 4 error) matching the lowest
// level logger records, math.MaxInt32 when it records nothing.
func LogLevel(l hclog.Level) int32 {
	switch {
	case l == hclog.Off || l == hclog.NoLevel:
		return math.MaxInt32
	case l <= hclog.Trace:
		return 0
	case l == hclog.Debug:
		return 1
	case l == hclog.Info:
		return 2
	case l == hclog.Warn:
		return 3
	default:
		return 4
	}
}

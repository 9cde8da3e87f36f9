package plugins

import "time"

// On-error modes for a plugin.
const (
	OnErrorDeny = "deny" // fail closed: the call or listing fails (default)
	OnErrorSkip = "skip" // fail open: the plugin is skipped
)

// Defaults applied to a Spec.
const (
	DefaultTimeout     = 100 * time.Millisecond
	DefaultMemoryBytes = 64 << 20
	MinMemoryBytes     = 8 << 20 // Go guests need at least this
)

// Spec configures one plugin in the chain. Plugins run in the order given.
type Spec struct {
	Name    string
	Source  string            // a path to a .wasm file, or "builtin:NAME"
	SHA256  string            // optional hex digest; anything else is refused
	Servers []string          // optional scope; empty means every server
	Config  map[string]string // passed as Extism config
	Timeout time.Duration     // per hook call
	Memory  uint64            // bytes; capped guest memory
	OnError string            // OnErrorDeny or OnErrorSkip

	// Grants; by default a plugin has no filesystem, network or environment.
	AllowedHosts []string          // hosts reachable through Extism HTTP
	AllowedPaths map[string]string // host path -> guest path
	Env          map[string]string // environment variables visible to WASI
}

package plugins

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/mcphost-project/mcphost/plugins/internal/extismhost"
)

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

	// DefaultListTimeout is the least time a tools_list hook (and the
	// describe call at load) is given: it runs once per listing, not per
	// call, on the whole catalog (hundreds of KB of JSON; a Go guest needs
	// about 60 ms for 200 tools on 2 cores), where DefaultTimeout would
	// fail it under load.
	DefaultListTimeout = 2 * time.Second

	// DefaultMaxOutputBytes caps what one hook call may return; a larger
	// output is a failure (ErrOutputTooLarge).
	DefaultMaxOutputBytes = 16 << 20
	// MaxInstances bounds Spec.Instances: each warm Go instance holds 3 to
	// 6 MB of linear memory and some 0.7 MB of call stack.
	MaxInstances = 64
)

// BuiltinPrefix marks a Source resolved by RuntimeOptions.Builtin.
const BuiltinPrefix = "builtin:"

// Spec configures one plugin in the chain. Plugins run in the order given.
type Spec struct {
	Name    string
	Source  string   // a path to a .wasm file, or "builtin:NAME"
	SHA256  string   // optional hex digest; anything else is refused
	Servers []string // optional scope; empty means every server
	// Callers and Groups scope the plugin to callers (abi.Caller.Subject,
	// abi.Caller.Groups): with either set, the plugin runs only for a caller
	// whose subject is in Callers or who is in one of Groups.
	Callers []string
	Groups  []string
	Config  map[string]string // passed as Extism config
	Timeout time.Duration     // per hook call
	// ListTimeout bounds tools_list and describe; 0 means
	// max(Timeout, DefaultListTimeout).
	ListTimeout time.Duration
	Memory      uint64 // bytes; capped guest memory
	OnError     string // OnErrorDeny or OnErrorSkip

	// Grants; by default a plugin has no filesystem, network or environment.
	// AllowedHosts are the hosts reachable through Extism HTTP: names,
	// globs like "*.example.com", IP addresses, each with an optional
	// ":port". Loopback, private, link-local and other non-public
	// addresses are reachable only when an entry names the address itself
	// (or "localhost" for loopback); see CheckAllowedHost.
	AllowedHosts []string
	AllowedPaths map[string]string // host path -> guest path; "ro:" before the host path mounts read-only
	Env          map[string]string // environment variables visible to WASI

	// Instances is the most instances the plugin's pool holds, and so the
	// number of hook calls it runs at once; 0 means min(GOMAXPROCS, 4).
	// One is made at load; the pool grows when calls overlap, and keeps
	// what it made.
	Instances int
	// MaxOutputBytes caps one hook's output; 0 means DefaultMaxOutputBytes.
	MaxOutputBytes int

	// Kind is KindPolicy (the zero value) or KindTools: a tool plugin,
	// which must export mcphost_tools and mcphost_tool_invoke (ABI 1.4).
	// Its hooks, if it has any, are not run as policies.
	Kind string
	// The grants of a tool plugin's host functions (abi.ToolHostModule),
	// off by default: KV its key-value store (Runtime.UseKV), Progress
	// and ClientLog messages to the client calling a tool.
	KV, Progress, ClientLog bool
}

// WithDefaults returns a copy of s with every unset field given its default.
func (s Spec) WithDefaults() Spec {
	if s.Timeout == 0 {
		s.Timeout = DefaultTimeout
	}
	if s.ListTimeout == 0 {
		s.ListTimeout = max(s.Timeout, DefaultListTimeout)
	}
	if s.Memory == 0 {
		s.Memory = DefaultMemoryBytes
	}
	if s.OnError == "" {
		s.OnError = OnErrorDeny
	}
	if s.Instances == 0 {
		s.Instances = min(runtime.GOMAXPROCS(0), 4)
	}
	if s.MaxOutputBytes == 0 {
		s.MaxOutputBytes = DefaultMaxOutputBytes
	}
	return s
}

// Validate reports the first problem of a spec that has had its defaults applied.
func (s Spec) Validate() error {
	switch {
	case s.Name == "":
		return fmt.Errorf("%w: name is empty", ErrSpec)
	case s.Source == "":
		return fmt.Errorf("%w: %s: source is empty", ErrSpec, s.Name)
	case s.Source == BuiltinPrefix:
		return fmt.Errorf("%w: %s: builtin name is empty", ErrSpec, s.Name)
	case s.Timeout < 0 || s.ListTimeout < 0:
		return fmt.Errorf("%w: %s: negative timeout", ErrSpec, s.Name)
	case s.Memory < MinMemoryBytes:
		return fmt.Errorf("%w: %s: memory %d is below the minimum %d", ErrSpec, s.Name, s.Memory, MinMemoryBytes)
	case s.Memory > 4<<30:
		return fmt.Errorf("%w: %s: memory %d is above 4 GiB", ErrSpec, s.Name, s.Memory)
	case s.OnError != OnErrorDeny && s.OnError != OnErrorSkip:
		return fmt.Errorf("%w: %s: on_error %q is neither %q nor %q", ErrSpec, s.Name, s.OnError, OnErrorDeny, OnErrorSkip)
	case s.Instances < 1 || s.Instances > MaxInstances:
		return fmt.Errorf("%w: %s: instances %d is outside 1..%d", ErrSpec, s.Name, s.Instances, MaxInstances)
	case s.MaxOutputBytes < 0:
		return fmt.Errorf("%w: %s: negative max output", ErrSpec, s.Name)
	case s.Kind != KindPolicy && s.Kind != KindTools:
		return fmt.Errorf("%w: %s: unknown kind %q", ErrSpec, s.Name, s.Kind)
	case s.Kind != KindTools && (s.KV || s.Progress || s.ClientLog):
		return fmt.Errorf("%w: %s: kv, progress and client_log are grants of tool plugins", ErrSpec, s.Name)
	}
	for _, h := range s.AllowedHosts {
		if err := CheckAllowedHost(h); err != nil {
			return fmt.Errorf("%w: %s: allowed_hosts: %w", ErrSpec, s.Name, err)
		}
	}
	if s.SHA256 != "" && !isHex64(s.SHA256) {
		return fmt.Errorf("%w: %s: sha256 %q is not 64 hex digits", ErrSpec, s.Name, s.SHA256)
	}
	return nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range strings.ToLower(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// CheckAllowedHost reports why an allowed_hosts entry is not valid, or nil:
// an entry is a host name, an IP address or a glob over host names
// ("*.example.com"), with an optional ":port".
func CheckAllowedHost(entry string) error { return extismhost.CheckAllowedHost(entry) }

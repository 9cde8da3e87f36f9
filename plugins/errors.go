package plugins

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcphost-project/mcphost/plugins/internal/extismhost"
)

// Sentinel errors. Every error this package returns wraps one of these (or is
// a *PluginError), so callers branch with errors.Is and errors.As.
var (
	// Load-time errors.
	ErrSpec            = errors.New("plugins: invalid spec")
	ErrSource          = errors.New("plugins: cannot read source")
	ErrChecksum        = errors.New("plugins: sha256 mismatch")
	ErrCompile         = errors.New("plugins: compile failed")
	ErrInstantiate     = errors.New("plugins: instantiate failed")
	ErrMissingExport   = errors.New("plugins: missing export")
	ErrABIVersion      = errors.New("plugins: unsupported ABI version")
	ErrInvalidDescribe = errors.New("plugins: invalid describe output")
	ErrConfig          = errors.New("plugins: invalid configuration")

	// Call-time errors.
	ErrNoHook         = errors.New("plugins: plugin does not implement hook")
	ErrTimeout        = errors.New("plugins: hook timed out")
	ErrTrap           = errors.New("plugins: guest trapped")
	ErrMemoryLimit    = errors.New("plugins: guest memory limit reached")
	ErrOutputTooLarge = errors.New("plugins: output too large")
	ErrInvalidOutput  = errors.New("plugins: invalid output")
	ErrUnavailable    = errors.New("plugins: plugin unavailable (crash loop backoff)")
	ErrClosed         = errors.New("plugins: closed")
)

// PluginError is a plugin's own failure: the export returned non-zero, with
// the message it set through Extism's error output. The instance stays usable.
type PluginError struct {
	Plugin  string
	Hook    string
	Code    uint32
	Message string
}

func (e *PluginError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = "(no message)"
	}
	return fmt.Sprintf("plugins: %s: %s returned %d: %s", e.Plugin, e.Hook, e.Code, msg)
}

// TrapError reports a guest that trapped, exited or was stopped; its instance
// has been thrown away. It matches ErrTrap, and ErrMemoryLimit when the guest
// was refused memory before it died.
type TrapError struct {
	Plugin   string
	Hook     string
	ExitCode uint32 // non-zero when the guest called proc_exit
	Memory   bool   // a memory grow was refused during the call
	Stderr   string // the tail of what the guest wrote to stderr (not in Error: it may hold guest internals)
	Err      error  // the engine's error
}

func (e *TrapError) Error() string {
	s := fmt.Sprintf("plugins: %s: %s trapped", e.Plugin, e.Hook)
	if e.Memory {
		s += " (memory limit reached)"
	}
	if e.ExitCode != 0 {
		s += fmt.Sprintf(": exit code %d", e.ExitCode)
	} else if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *TrapError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrTrap) and, after a refused grow,
// errors.Is(err, ErrMemoryLimit) true.
func (e *TrapError) Is(target error) bool {
	return target == ErrTrap || (e.Memory && target == ErrMemoryLimit)
}

// LoadError reports why a plugin could not be loaded, naming it and its source.
type LoadError struct {
	Name   string
	Source string // the path or builtin:NAME
	Err    error
}

func (e *LoadError) Error() string {
	return fmt.Sprintf("plugins: load %q from %s: %v", e.Name, e.Source, e.Err)
}

func (e *LoadError) Unwrap() error { return e.Err }

// PolicyError is a plugin that failed closed (on_error "deny"): the chain
// returns it, or denies a call with its ClientMessage as the reason. Error
// has every detail, for logs; ClientMessage is what a client may be told.
type PolicyError struct {
	Plugin string
	Hook   string
	Err    error
}

func (e *PolicyError) Error() string {
	return fmt.Sprintf("plugins: policy %q failed in %s: %v", e.Plugin, e.Hook, e.Err)
}

func (e *PolicyError) Unwrap() error { return e.Err }

// ClientMessage names the plugin, the hook and the kind of failure, and
// nothing of the engine's own text (Wasm stack traces, addresses, guest
// stderr). A guest's own error message is included: the host cleans it to
// one bounded line of printable text before a client sees it.
func (e *PolicyError) ClientMessage() string {
	return fmt.Sprintf("policy %q failed in %s: %s", e.Plugin, e.Hook, failureKind(e.Err))
}

// failureKind describes err in a few words for a client.
func failureKind(err error) string {
	var te *TrapError
	var pe *PluginError
	switch {
	case errors.Is(err, ErrTimeout):
		return "timed out"
	case errors.As(err, &te):
		switch {
		case te.Memory:
			return "stopped: memory limit reached"
		case te.ExitCode != 0:
			return fmt.Sprintf("exited with code %d", te.ExitCode)
		}
		return "crashed"
	case errors.As(err, &pe):
		if pe.Message == "" {
			return fmt.Sprintf("returned error code %d", pe.Code)
		}
		return "returned an error: " + pe.Message
	case errors.Is(err, ErrOutputTooLarge):
		return "output too large"
	case errors.Is(err, ErrTooDeep):
		return "invalid output: " + ErrTooDeep.Error()
	case errors.Is(err, ErrInvalidOutput):
		return "invalid output"
	case errors.Is(err, ErrUnavailable):
		return "unavailable after repeated failures"
	case errors.Is(err, ErrClosed):
		return "shutting down"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	}
	return "failed"
}

// ErrHTTPRefused marks a plugin's http_request that allowed_hosts or the
// address rules refused.
var ErrHTTPRefused = extismhost.ErrHTTPRefused

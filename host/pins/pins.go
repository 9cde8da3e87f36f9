// Package pins reads and approves the pin files of a config's builtin:pin
// plugins: what `mcphost pins` and the admin API's /v1/pins do, in one
// place.
//
// A builtin:pin plugin keeps the tool definitions it trusts in a pin file
// (policies.PinFile), at a path inside the plugin. Find maps that path to
// the host through the plugin's allowed_paths; List reads the files;
// Approve makes pending definitions the pinned ones and writes the files
// back, atomically. A running gateway takes an approval into account once
// its plugins reload.
//
// Replicas on one store share their pins through it (Shared): each keeps
// its own file, which the plugin reads, merged with the store every few
// seconds.
package pins

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/mcphost-project/mcphost/filters/policies"
	"github.com/mcphost-project/mcphost/plugins"
)

// Source is the plugin source of builtin:pin.
const Source = plugins.BuiltinPrefix + "pin"

// ErrNoPlugin is what Find's error matches (errors.Is) when the config has
// no builtin:pin plugin, or none of the name asked for.
var ErrNoPlugin = errors.New("no builtin:pin plugin")

// Plugin is one builtin:pin plugin and where its pin file is on this host.
type Plugin struct {
	Name      string `json:"plugin"`
	GuestPath string `json:"guestPath"` // the pin file, as the plugin sees it
	HostPath  string `json:"file"`      // the pin file on this host
}

// Find returns the builtin:pin plugins of specs, in their order, with each
// one's pin file (its "file" config, by default policies.DefaultPinFile)
// mapped to the host through its allowed_paths. With only set, it returns
// only the plugin of that name.
//
// A pin file under no allowed_paths grant is an error: the plugin could not
// keep its pins. So is finding no plugin; that error matches ErrNoPlugin.
func Find(specs []plugins.Spec, only string) ([]Plugin, error) {
	var out []Plugin
	for _, s := range specs {
		if s.Source != Source || (only != "" && s.Name != only) {
			continue
		}
		guest := s.Config["file"]
		if guest == "" {
			guest = policies.DefaultPinFile
		}
		host, ok := hostPath(s.AllowedPaths, guest)
		if !ok {
			return nil, fmt.Errorf("plugin %q: its pin file %s is under no allowed_paths grant; add one, like allowed_paths = { \"./pins\" = \"%s\" }", s.Name, guest, path.Dir(guest))
		}
		out = append(out, Plugin{Name: s.Name, GuestPath: guest, HostPath: host})
	}
	if len(out) == 0 {
		return nil, noPluginError{only}
	}
	return out, nil
}

// noPluginError is Find's error when it finds nothing.
type noPluginError struct{ only string }

func (e noPluginError) Error() string {
	if e.only != "" {
		return fmt.Sprintf("no builtin:pin plugin named %q in the config", e.only)
	}
	return `no plugin with source = "builtin:pin" in the config`
}

func (e noPluginError) Is(target error) bool { return target == ErrNoPlugin }

// hostPath maps a guest path through allowed_paths (host -> guest; "ro:"
// marks read-only), by the longest guest directory that contains it.
func hostPath(grants map[string]string, guest string) (string, bool) {
	guest = path.Clean(guest)
	best, bestLen := "", -1
	for host, g := range grants {
		host = strings.TrimPrefix(host, "ro:")
		g = path.Clean(g)
		var rel string
		switch {
		case g == guest:
			rel = "."
		case g == "/":
			rel = strings.TrimPrefix(guest, "/")
		case strings.HasPrefix(guest, g+"/"):
			rel = guest[len(g)+1:]
		default:
			continue
		}
		if len(g) > bestLen {
			best, bestLen = filepath.Join(host, filepath.FromSlash(rel)), len(g)
		}
	}
	return best, bestLen >= 0
}

// FileError is a pin file that could not be read or written.
type FileError struct {
	Plugin string // the builtin:pin plugin
	Path   string // its pin file on the host
	Write  bool   // true when writing failed, false when reading did
	Err    error
}

func (e *FileError) Error() string {
	if e.Write {
		return fmt.Sprintf("plugin %q: writing %s: %v", e.Plugin, e.Path, e.Err)
	}
	return fmt.Sprintf("plugin %q: %s: %v", e.Plugin, e.Path, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// Listed is a builtin:pin plugin with the tools its file pins, by
// policies.PinKey. Its JSON is an element of `mcphost pins list --json`.
type Listed struct {
	Plugin
	Tools map[string]*policies.PinEntry `json:"tools"`
}

// Keys returns the keys of l.Tools, sorted.
func (l Listed) Keys() []string {
	keys := make([]string, 0, len(l.Tools))
	for k := range l.Tools {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Pending returns how many of l.Tools have a pending change.
func (l Listed) Pending() int {
	n := 0
	for _, e := range l.Tools {
		if e.Pending != nil {
			n++
		}
	}
	return n
}

// List reads the pin file of each of ps, in order. A missing file pins
// nothing. On error, a *FileError, List returns the plugins read before
// it along with it.
func List(ps []Plugin) ([]Listed, error) {
	out := make([]Listed, 0, len(ps))
	for _, p := range ps {
		f, err := read(p)
		if err != nil {
			return out, err
		}
		out = append(out, Listed{p, f.Tools})
	}
	return out, nil
}

func read(p Plugin) (*policies.PinFile, error) {
	f, err := policies.ReadPinFile(p.HostPath)
	if err != nil {
		return nil, &FileError{Plugin: p.Name, Path: p.HostPath, Err: err}
	}
	return f, nil
}

// Approval is what Approve did.
type Approval struct {
	// Approved are the changes approved and written, by plugin in the
	// order of ps, then in the order of keys (or, with all, of the
	// sorted keys).
	Approved []Approved
	// NotPending are the keys named that a plugin pins with no pending
	// change, in the same order; a key appears once for each plugin
	// that pins it so.
	NotPending []string
	// Unknown are the keys named that no plugin pins, in the order of
	// keys, each once.
	Unknown []string
}

// Approved is one approved change.
type Approved struct {
	Key    string `json:"key"`
	Plugin string `json:"plugin"`
}

// Approve makes pending definitions the pinned ones, stamped with now:
// with all, every pending change of every plugin of ps; otherwise those of
// keys (policies.PinKey, "server/tool") in every plugin that pins them. It
// writes each pin file that changed with policies.WritePinFile, so that a
// reader sees the old file or the new one.
//
// A key with no pending change and a key that no plugin pins are not
// errors: Approval reports them, and approves the other keys. Neither is
// approving nothing. With all, keys are not looked up: each is reported in
// Unknown (callers pass one or the other).
//
// On error, Approval holds what was done before it: the plugins before the
// failing one are written. Reading or writing a pin file fails with a
// *FileError; a key named twice fails, on its second approval, with the
// error of policies.PinFile.Approve, and that plugin's file is not
// written.
func Approve(ps []Plugin, keys []string, all bool, now time.Time) (Approval, error) {
	stamp := now.UTC().Format(time.RFC3339)
	var a Approval
	found := map[string]bool{}
	for _, p := range ps {
		f, err := read(p)
		if err != nil {
			return a, err
		}
		var these []string
		if all {
			for _, k := range f.Keys() {
				if f.Tools[k].Pending != nil {
					these = append(these, k)
				}
			}
		} else {
			for _, k := range keys {
				e := f.Tools[k]
				if e == nil {
					continue
				}
				found[k] = true
				if e.Pending == nil {
					a.NotPending = append(a.NotPending, k)
					continue
				}
				these = append(these, k)
			}
		}
		if len(these) == 0 {
			continue
		}
		for _, k := range these {
			if err := f.Approve(k, stamp); err != nil {
				return a, err
			}
		}
		if err := policies.WritePinFile(p.HostPath, f); err != nil {
			return a, &FileError{Plugin: p.Name, Path: p.HostPath, Write: true, Err: err}
		}
		for _, k := range these {
			a.Approved = append(a.Approved, Approved{Key: k, Plugin: p.Name})
		}
	}
	for _, k := range keys {
		if !found[k] {
			found[k] = true // report each once
			a.Unknown = append(a.Unknown, k)
		}
	}
	return a, nil
}

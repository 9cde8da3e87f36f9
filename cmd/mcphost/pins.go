package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcphost-project/mcphost/filters/policies"
	"github.com/mcphost-project/mcphost/plugins"
)

const pinsUsage = `usage:
  mcphost pins list CONFIG [--plugin NAME] [--json]
  mcphost pins approve CONFIG (SERVER/TOOL ... | --all) [--plugin NAME]

Reads and updates the pin files of the builtin:pin plugins of CONFIG.`

// runPins lists the definitions builtin:pin has pinned and approves the
// changes it holds back.
func runPins(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, pinsUsage)
		return exitError(2)
	}
	sub := args[0]
	fs := newFlagSet("pins "+sub, stderr)
	plugin := fs.String("plugin", "", "only the builtin:pin plugin of this name")
	asJSON := fs.Bool("json", false, "print JSON (list)")
	all := fs.Bool("all", false, "approve every pending change (approve)")
	pos, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return exitError(2)
	}
	if (sub != "list" && sub != "approve") || len(pos) == 0 {
		fmt.Fprintln(stderr, pinsUsage)
		return exitError(2)
	}
	file, err := loadConfig(pos[0], stderr)
	if err != nil {
		return err
	}
	pins, err := pinFiles(file.Plugins, *plugin)
	if err != nil {
		fmt.Fprintln(stderr, "mcphost pins:", err)
		return exitError(1)
	}
	switch sub {
	case "list":
		return listPins(pins, *asJSON, pos[0], stdout, stderr)
	default:
		keys := pos[1:]
		if len(keys) == 0 && !*all {
			fmt.Fprintln(stderr, "mcphost pins approve: name the tools to approve as SERVER/TOOL, or pass --all")
			return exitError(2)
		}
		return approvePins(pins, keys, *all, stdout, stderr)
	}
}

// pinPlugin is one builtin:pin plugin and where its file is on this host.
type pinPlugin struct {
	Name      string `json:"plugin"`
	GuestPath string `json:"guestPath"`
	HostPath  string `json:"file"`
}

// pinFiles finds the builtin:pin plugins of a config and maps each one's
// pin file, a path inside the plugin, to the host through its grants.
func pinFiles(specs []plugins.Spec, only string) ([]pinPlugin, error) {
	var out []pinPlugin
	for _, s := range specs {
		if s.Source != plugins.BuiltinPrefix+"pin" || (only != "" && s.Name != only) {
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
		out = append(out, pinPlugin{Name: s.Name, GuestPath: guest, HostPath: host})
	}
	if len(out) == 0 {
		if only != "" {
			return nil, fmt.Errorf("no builtin:pin plugin named %q in the config", only)
		}
		return nil, fmt.Errorf(`no plugin with source = "builtin:pin" in the config`)
	}
	return out, nil
}

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

func listPins(pins []pinPlugin, asJSON bool, config string, stdout, stderr io.Writer) error {
	type listed struct {
		pinPlugin
		Tools map[string]*policies.PinEntry `json:"tools"`
	}
	var all []listed
	for _, p := range pins {
		f, err := policies.ReadPinFile(p.HostPath)
		if err != nil {
			fmt.Fprintf(stderr, "mcphost pins: plugin %q: %s: %v\n", p.Name, p.HostPath, err)
			return exitError(1)
		}
		all = append(all, listed{p, f.Tools})
		if asJSON {
			continue
		}
		pending := 0
		for _, e := range f.Tools {
			if e.Pending != nil {
				pending++
			}
		}
		fmt.Fprintf(stdout, "plugin %q: %s: %d tools pinned, %d changed\n", p.Name, p.HostPath, len(f.Tools), pending)
		for _, k := range f.Keys() {
			e := f.Tools[k]
			sum := e.SHA256
			if len(sum) > 12 {
				sum = sum[:12]
			}
			if e.Pending == nil {
				fmt.Fprintf(stdout, "  %-40s pinned   %s  sha256 %s\n", k, e.PinnedAt, sum)
				continue
			}
			fmt.Fprintf(stdout, "  %-40s CHANGED  %s  hidden until: mcphost pins approve %s %s\n", k, e.Pending.SeenAt, config, k)
			for _, line := range strings.Split(strings.TrimRight(policies.PinDiff(e.Definition, e.Pending.Definition), "\n"), "\n") {
				fmt.Fprintf(stdout, "      %s\n", line)
			}
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(all)
	}
	return nil
}

func approvePins(pins []pinPlugin, keys []string, all bool, stdout, stderr io.Writer) error {
	now := time.Now().UTC().Format(time.RFC3339)
	found := map[string]bool{}
	approved := 0
	for _, p := range pins {
		f, err := policies.ReadPinFile(p.HostPath)
		if err != nil {
			fmt.Fprintf(stderr, "mcphost pins: plugin %q: %s: %v\n", p.Name, p.HostPath, err)
			return exitError(1)
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
				if e := f.Tools[k]; e != nil {
					found[k] = true
					if e.Pending == nil {
						fmt.Fprintf(stderr, "mcphost pins: %s has no pending change\n", k)
						continue
					}
					these = append(these, k)
				}
			}
		}
		if len(these) == 0 {
			continue
		}
		for _, k := range these {
			if err := f.Approve(k, now); err != nil {
				return err
			}
		}
		if err := policies.WritePinFile(p.HostPath, f); err != nil {
			fmt.Fprintf(stderr, "mcphost pins: plugin %q: writing %s: %v\n", p.Name, p.HostPath, err)
			return exitError(1)
		}
		for _, k := range these {
			fmt.Fprintf(stdout, "approved %s (plugin %q)\n", k, p.Name)
		}
		approved += len(these)
	}
	for _, k := range keys {
		if !found[k] {
			fmt.Fprintf(stderr, "mcphost pins: no pinned tool %q (tools are named SERVER/TOOL, as pins list shows them)\n", k)
			return exitError(1)
		}
	}
	if approved == 0 {
		fmt.Fprintln(stdout, "nothing to approve")
		return nil
	}
	fmt.Fprintln(stdout, "A running mcphost lists and admits the tool again once it reloads: send it SIGHUP (kill -HUP PID).")
	return nil
}

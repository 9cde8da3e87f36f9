package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcphost-project/mcphost/filters/policies"
	"github.com/mcphost-project/mcphost/host/pins"
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
	if isHelp(sub) {
		fmt.Fprintln(stdout, pinsUsage)
		return nil
	}
	fs := newFlagSet("pins "+sub, pinsUsage, stdout, stderr)
	plugin := fs.String("plugin", "", "only the builtin:pin plugin of this name")
	asJSON := fs.Bool("json", false, "print JSON (list)")
	all := fs.Bool("all", false, "approve every pending change (approve)")
	pos, err := fs.parse(args[1:])
	if err != nil {
		return err
	}
	if (sub != "list" && sub != "approve") || len(pos) == 0 {
		return fs.misuse()
	}
	file, err := loadConfig(pos[0], stderr)
	if err != nil {
		return err
	}
	ps, err := pins.Find(file.Plugins, *plugin)
	if err != nil {
		fmt.Fprintln(stderr, "mcphost pins:", err)
		return exitError(1)
	}
	switch sub {
	case "list":
		return listPins(ps, *asJSON, pos[0], stdout, stderr)
	default:
		keys := pos[1:]
		if len(keys) == 0 && !*all {
			fmt.Fprintln(stderr, "mcphost pins approve: name the tools to approve as SERVER/TOOL, or pass --all")
			return exitError(2)
		}
		return approvePins(ps, keys, *all, stdout, stderr)
	}
}

func listPins(ps []pins.Plugin, asJSON bool, config string, stdout, stderr io.Writer) error {
	all, err := pins.List(ps)
	if !asJSON {
		// The plugins read before an error are printed, then the error.
		for _, l := range all {
			printListed(stdout, l, config)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "mcphost pins:", err)
		return exitError(1)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(all)
	}
	return nil
}

func printListed(stdout io.Writer, l pins.Listed, config string) {
	fmt.Fprintf(stdout, "plugin %q: %s: %s pinned, %d changed\n", l.Name, l.HostPath, plural(len(l.Tools), "tool"), l.Pending())
	for _, k := range l.Keys() {
		e := l.Tools[k]
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

// approvePins approves one plugin at a time, so that what it prints about
// each plugin comes out together even when stdout and stderr are one
// stream.
func approvePins(ps []pins.Plugin, keys []string, all bool, stdout, stderr io.Writer) error {
	now := time.Now()
	unknownTo := map[string]int{} // how many plugins do not pin each key
	approved := 0
	for _, p := range ps {
		a, err := pins.Approve([]pins.Plugin{p}, keys, all, now)
		for _, k := range a.NotPending {
			fmt.Fprintf(stderr, "mcphost pins: %s has no pending change\n", k)
		}
		if err != nil {
			var fe *pins.FileError
			if !errors.As(err, &fe) {
				return err
			}
			fmt.Fprintln(stderr, "mcphost pins:", err)
			return exitError(1)
		}
		for _, ap := range a.Approved {
			fmt.Fprintf(stdout, "approved %s (plugin %q)\n", ap.Key, ap.Plugin)
		}
		approved += len(a.Approved)
		for _, k := range a.Unknown {
			unknownTo[k]++
		}
	}
	for _, k := range keys {
		if unknownTo[k] == len(ps) {
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

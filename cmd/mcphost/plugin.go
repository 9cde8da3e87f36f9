package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/plugins"
	"github.com/mcphost-project/mcphost/plugins/compat"
)

func runPlugin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, pluginUsage)
		return exitError(2)
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprintln(stdout, pluginUsage)
		return nil
	case "inspect":
		return runPluginInspect(ctx, args[1:], stdout, stderr)
	case "test":
		return runPluginTest(ctx, args[1:], stdout, stderr)
	case "check":
		return runPluginCheck(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "mcphost plugin: unknown command %q (want inspect, test or check)\n\n%s\n", args[0], pluginUsage)
	return exitError(2)
}

const pluginUsage = `usage:
  mcphost plugin inspect FILE [--json]
  mcphost plugin test FILE --hook HOOK --input IN.json [--config KEY=VALUE ...] [--timeout D] [--log-level LEVEL]
  mcphost plugin check FILE [CASE.txtar | DIR ...] [--config KEY=VALUE ...] [--timeout D]

FILE is a WebAssembly plugin, or builtin:NAME for a policy built into
mcphost. inspect describes it; test runs one hook on an input as the host
would; check proves it keeps the ABI, then passes its own cases. Run
"mcphost plugin COMMAND -h" for a command's flags.`

// pluginRuntime is a runtime for one-off plugin commands, logging plugin
// output to stderr.
func pluginRuntime(ctx context.Context, stderr io.Writer, level string) (*plugins.Runtime, error) {
	log := hclog.New(&hclog.LoggerOptions{Name: "plugin", Level: hclog.LevelFromString(level), Output: stderr})
	return plugins.NewRuntime(ctx, plugins.RuntimeOptions{Logger: log, Builtin: builtinPolicy, BuiltinNames: builtinNames})
}

func runPluginInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("plugin inspect", "usage: mcphost plugin inspect FILE|builtin:NAME [--json] [--config KEY=VALUE ...]", stdout, stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	cfg := configFlags{}
	fs.Var(cfg, "config", "plugin config KEY=VALUE (repeatable), as a plugin block's config gives it")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fs.misuse()
	}
	rt, err := pluginRuntime(ctx, stderr, "warn")
	if err != nil {
		return err
	}
	defer rt.Close(context.WithoutCancel(ctx))
	info, ierr := plugins.Inspect(ctx, rt, pos[0], cfg)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		out := struct {
			plugins.Info
			CompileMillis     float64 `json:"CompileMillis"`
			InstantiateMillis float64 `json:"InstantiateMillis"`
			Error             string  `json:"Error,omitempty"`
		}{Info: info, CompileMillis: ms(info.CompileTime), InstantiateMillis: ms(info.InstantiateTime)}
		if ierr != nil {
			out.Error = ierr.Error()
		}
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else if ierr == nil || described(ierr) {
		fmt.Fprintf(stdout, "file:        %s\n", info.Path)
		fmt.Fprintf(stdout, "size:        %d bytes\n", info.Size)
		fmt.Fprintf(stdout, "sha256:      %s\n", info.SHA256)
		if info.ABI != "" {
			fmt.Fprintf(stdout, "abi:         %s\n", info.ABI)
			fmt.Fprintf(stdout, "name:        %s\n", info.Name)
			fmt.Fprintf(stdout, "version:     %s\n", info.Version)
			fmt.Fprintf(stdout, "hooks:       %s\n", strings.Join(info.Hooks, ", "))
		}
		exports := strings.Join(info.Exports, ", ")
		if exports == "" {
			exports = "(none)"
		}
		fmt.Fprintf(stdout, "exports:     %s\n", exports)
		fmt.Fprintf(stdout, "compile:     %s (cached compiles are much faster)\n", info.CompileTime.Round(time.Millisecond))
		fmt.Fprintf(stdout, "instantiate: %s\n", info.InstantiateTime.Round(10*time.Microsecond))
	}
	if ierr != nil {
		fmt.Fprintf(stderr, "mcphost: %s does not load: %v\n", pos[0], ierr)
		if errors.Is(ierr, plugins.ErrConfig) || strings.Contains(ierr.Error(), "pdk: configuring ") {
			fmt.Fprintf(stderr, "It describes itself only with its configuration: pass it as a plugin block would, with --config KEY=VALUE (values as the block writes them; lists as JSON, like --config 'tools=[\"*delete*\"]').\n")
		}
		return exitError(1)
	}
	return nil
}

// described reports whether Inspect got as far as an instance of the
// module, so that its report means something although the module fails
// the load check. Before that (a file that is missing or no module, a
// module that does not compile or instantiate), only the error does.
func described(err error) bool {
	for _, early := range []error{plugins.ErrSource, plugins.ErrChecksum, plugins.ErrCompile, plugins.ErrInstantiate} {
		if errors.Is(err, early) {
			return false
		}
	}
	return true
}

// hookList names the hooks plugin test runs: those of abi.HookMinor, the
// ABI's hooks, oldest first.
func hookList() string {
	hooks := slices.SortedFunc(maps.Keys(abi.HookMinor), func(a, b string) int {
		return cmp.Or(cmp.Compare(abi.HookMinor[a], abi.HookMinor[b]), cmp.Compare(a, b))
	})
	return strings.Join(hooks[:len(hooks)-1], ", ") + " or " + hooks[len(hooks)-1]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// configFlags collects repeated --config KEY=VALUE flags.
type configFlags map[string]string

func (c configFlags) String() string { return "" }

func (c configFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", s)
	}
	c[k] = v
	return nil
}

func runPluginTest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("plugin test", "usage: mcphost plugin test FILE|builtin:NAME --hook HOOK --input IN.json [--config KEY=VALUE ...]", stdout, stderr)
	hook := fs.String("hook", "", "hook to run: "+hookList())
	input := fs.String("input", "", `file holding the hook's input JSON ("-" for stdin)`)
	timeout := fs.Duration("timeout", time.Second, "hook timeout")
	logLevel := fs.String("log-level", "info", "level of the plugin's own log output")
	cfg := configFlags{}
	fs.Var(cfg, "config", "plugin config KEY=VALUE (repeatable)")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *hook == "" || *input == "" {
		return fs.misuse()
	}
	var in []byte
	if *input == "-" {
		in, err = io.ReadAll(os.Stdin)
	} else {
		in, err = os.ReadFile(*input)
	}
	if err != nil {
		return fmt.Errorf("reading input: %w", err)
	}
	rt, err := pluginRuntime(ctx, stderr, *logLevel)
	if err != nil {
		return err
	}
	defer rt.Close(context.WithoutCancel(ctx))
	for _, w := range hookInputWarnings(*hook, in) {
		fmt.Fprintf(stderr, "mcphost: warning: %s\n", w)
	}
	spec := plugins.Spec{Name: "test", Source: pos[0], Config: cfg, Timeout: *timeout}.WithDefaults()
	out, err := plugins.RunHook(ctx, rt, spec, *hook, in)
	if len(out) > 0 {
		var pretty bytes.Buffer
		if json.Indent(&pretty, out, "", "  ") == nil {
			out = pretty.Bytes()
		}
		fmt.Fprintln(stdout, string(out))
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcphost: hook %s failed: %v\n", *hook, err)
		return exitError(1)
	}
	return nil
}

// runPluginCheck proves a plugin keeps the ABI (plugins/compat): what the
// ABI asks of every plugin, then the plugin's own cases, if given.
func runPluginCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("plugin check", "usage: mcphost plugin check FILE|builtin:NAME [CASE.txtar | DIR ...] [--config KEY=VALUE ...]", stdout, stderr)
	timeout := fs.Duration("timeout", 5*time.Second, "hook timeout")
	cfg := configFlags{}
	fs.Var(cfg, "config", "plugin config KEY=VALUE (repeatable), for the ABI's checks and under each case's own")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) < 1 {
		return fs.misuse()
	}
	rt, err := pluginRuntime(ctx, stderr, "warn")
	if err != nil {
		return err
	}
	defer rt.Close(context.WithoutCancel(ctx))
	spec := plugins.Spec{Name: "check", Source: pos[0], Config: cfg, Timeout: *timeout}.WithDefaults()
	results := compat.Probe(ctx, rt, spec)
	cases, err := compat.RunCases(ctx, rt, spec, pos[1:])
	if err != nil {
		return err
	}
	results = append(results, cases...)
	for _, r := range results {
		if r.Err != nil {
			fmt.Fprintf(stdout, "FAIL %s\n     %s\n", r.Name, strings.ReplaceAll(r.Err.Error(), "\n", "\n     "))
		} else {
			fmt.Fprintf(stdout, "ok   %s\n", r.Name)
		}
	}
	if n := compat.Failed(results); n > 0 {
		fmt.Fprintf(stdout, "%d of %d checks failed\n", n, len(results))
		return exitError(1)
	}
	fmt.Fprintf(stdout, "all %d checks passed\n", len(results))
	return nil
}

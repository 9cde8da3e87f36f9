package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/engine"
	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/host/tokens"
	"github.com/mcphost-project/mcphost/host/toolformat"
	"github.com/mcphost-project/mcphost/host/toolset"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/suggest"
	"github.com/mcphost-project/mcphost/plugins"
)

// cliCaller is who policies see when the CLI lists or calls tools.
var cliCaller = abi.Caller{Transport: gateway.DownstreamEmbedded, ClientName: "mcphost-cli"}

const validateUsage = `usage: mcphost validate CONFIG [--allow-missing-commands]

Prints every mistake in CONFIG, each with its place (file:line:col), what is
wrong and how to fix it, loads its plugins as a reload would, and checks that
each stdio server's command is a program this machine can run (a warning
instead of an error with --allow-missing-commands, for a config meant for
another machine). Exit status 1 on any error; without one it says what
CONFIG holds.`

func runValidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("validate", validateUsage, stdout, stderr)
	allowMissing := fs.Bool("allow-missing-commands", false, "a stdio command this machine lacks is a warning, not an error")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fs.misuse()
	}
	file, diags := config.Load(pos[0])
	// Plugins are loaded even when decoding found errors, so that one run
	// reports every mistake; Partial leaves out the plugins whose own
	// arguments have an error, whose load would only repeat it.
	checked := file
	if checked == nil {
		checked = diags.Partial()
	}
	if checked != nil {
		checkPlugins(ctx, checked, diags)
		checkCommands(checked, diags, *allowMissing)
	}
	if err := reportDiags(diags, stderr); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: ok (%s)\n", pos[0], holds(file))
	return nil
}

// holds says what a valid config holds: its servers, tool plugins (when
// it has any: they serve tools as a server does, but are plugins),
// toolsets (when it has any) and plugins.
func holds(file *config.File) string {
	parts := []string{plural(len(file.Host.Servers), "server")}
	if n := len(file.ToolPlugins); n > 0 {
		parts = append(parts, plural(n, "tool plugin"))
	}
	if n := len(file.Host.Toolsets); n > 0 {
		parts = append(parts, plural(n, "toolset"))
	}
	return strings.Join(append(parts, plural(len(file.Plugins), "plugin")), ", ")
}

// checkCommands adds a diagnostic for each stdio server whose command is no
// program here, as the admin API refuses such a definition and run would
// retry it for ever.
func checkCommands(file *config.File, diags *config.Diagnostics, warn bool) {
	for _, sc := range file.Host.Servers {
		if sc.Command == "" {
			continue // reported by decoding
		}
		if sc.Caller != nil && strings.Contains(sc.Command, "${caller.") {
			continue // known only when a caller's session starts
		}
		err := config.CheckCommand(sc)
		if err == nil {
			continue
		}
		d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Command not found",
			Detail: fmt.Sprintf("Server %q: %s.", sc.Name, strings.TrimPrefix(err.Error(), "command: "))}
		var se *config.SpecError
		if errors.As(err, &se) && len(se.Errors) == 1 {
			d.Detail = fmt.Sprintf("Server %q: %s.", sc.Name, se.Errors[0].Detail)
		}
		if warn {
			d.Severity = hcl.DiagWarning
			d.Detail += " (A warning: --allow-missing-commands.)"
		} else {
			d.Detail += " Or run validate with --allow-missing-commands, for a config meant for another machine."
		}
		if r, ok := file.CommandRange(sc.Name); ok {
			d.Subject = r.Ptr()
		}
		diags.Add(d)
	}
}

// checkPlugins loads every plugin and tools_plugin as a reload would
// (plugins.Check: the module, and describe with its configuration) and
// adds a diagnostic for each one that would not load: at the config key a
// configuration error names, at the config object for other configuration
// errors, else at its source.
func checkPlugins(ctx context.Context, file *config.File, diags *config.Diagnostics) {
	specs := slices.Concat(file.Plugins, file.ToolPlugins)
	if len(specs) == 0 {
		return
	}
	rt, err := plugins.NewRuntime(ctx, plugins.RuntimeOptions{CacheDir: file.Runtime.CacheDir, Builtin: builtinPolicy, BuiltinNames: builtinNames})
	if err != nil {
		diags.Add(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot check plugins",
			Detail: fmt.Sprintf("Starting the plugin runtime failed: %s.", err)})
		return
	}
	defer rt.Close(context.WithoutCancel(ctx))
	for _, spec := range specs {
		if err := plugins.Check(ctx, rt, spec); err != nil {
			diags.Add(pluginDiagnostic(file, spec, err))
		}
	}
}

// configKeyInError finds the key a configuration error is about: errors
// about a key start with config "KEY": (abi/pdk's, and the host's own).
var configKeyInError = regexp.MustCompile(`config "([^"]+)":`)

func pluginDiagnostic(file *config.File, spec plugins.Spec, err error) *hcl.Diagnostic {
	// Whole: the suggestion and the list of what is valid come last.
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	what := "Plugin"
	if spec.Kind == plugins.KindTools {
		what = "Tools plugin"
	}
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Plugin does not load", Detail: fmt.Sprintf("%s %q: %s.", what, spec.Name, msg)}
	configErr := errors.Is(err, plugins.ErrConfig) || strings.Contains(msg, "pdk: configuring ")
	if configErr {
		d.Summary = "Invalid plugin configuration"
		key := ""
		if m := configKeyInError.FindStringSubmatch(msg); m != nil {
			key = m[1]
		}
		if r, ok := file.ConfigRange(spec, key); ok {
			d.Subject = r.Ptr()
			return d
		}
	} else if !strings.HasPrefix(spec.Source, plugins.BuiltinPrefix) {
		d.Detail += " Point source at a WebAssembly module built for mcphost (see mcphost plugin inspect FILE)."
	}
	if r, ok := file.SourceRange(spec); ok {
		d.Subject = r.Ptr()
	}
	return d
}

// connectOnce loads a config, connects its upstreams (those pick names, or
// every one when pick is nil or names none), and reports the ones that
// failed on stderr. The caller closes the engine.
func connectOnce(ctx context.Context, name string, args []string, stdout, stderr io.Writer, extra func(*flagSetT), pick func(*config.File, []string) ([]string, error)) (*engine.Engine, []string, error) {
	fs := newFlagSet(name, connectUsage[name], stdout, stderr)
	var lf logFlags
	lf.register(fs.FlagSet, "warn")
	if extra != nil {
		extra(fs.FlagSet)
	}
	pos, err := fs.parse(args)
	if err != nil {
		return nil, nil, err
	}
	if len(pos) < 1 {
		return nil, nil, fs.misuse()
	}
	log, err := lf.logger(stderr)
	if err != nil {
		return nil, nil, err
	}
	file, err := loadConfig(pos[0], stderr)
	if err != nil {
		return nil, nil, err
	}
	if pick != nil {
		names, err := pick(file, pos[1:])
		if errors.Is(err, errMisuse) {
			return nil, nil, fs.misuse()
		} else if err != nil {
			return nil, nil, err
		}
		onlyServers(file, names)
	}
	e, err := startOneShot(ctx, file, log, stderr)
	if err != nil {
		return nil, nil, err
	}
	for _, st := range e.Host().Statuses() {
		if st.State != upstream.StateConnected {
			fmt.Fprintf(stderr, "server %s: %s: %s\n", st.Name, st.State, oneLine(st.Error))
		}
	}
	return e, pos[1:], nil
}

// onlyServers keeps the servers of file named in names; none keeps all.
func onlyServers(file *config.File, names []string) {
	if len(names) == 0 {
		return
	}
	keep := map[string]bool{}
	for _, n := range names {
		keep[n] = true
	}
	var servers []upstream.ServerConfig
	for _, sc := range file.Host.Servers {
		if keep[sc.Name] {
			servers = append(servers, sc)
		}
	}
	file.Host.Servers = servers
	var tools []plugins.Spec
	for _, sp := range file.ToolPlugins {
		if keep[sp.Name] {
			tools = append(tools, sp)
		}
	}
	file.ToolPlugins = tools
}

// serversNamed checks that every name is a server of file.
func serversNamed(file *config.File, names []string) ([]string, error) {
	known := make([]string, 0, len(file.Host.Servers)+len(file.ToolPlugins))
	for _, sc := range file.Host.Servers {
		known = append(known, sc.Name)
	}
	for _, sp := range file.ToolPlugins { // served as servers
		known = append(known, sp.Name)
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("no server %q in the config.%s Servers: %s", n, suggest.DidYouMean(n, known), strings.Join(known, ", "))
		}
	}
	return names, nil
}

// serversFor returns the servers a call of the exposed name can be served
// by: those whose prefix it carries, when every name carries one. A name
// whose server part was shortened (long names) matches none, and then
// every server starts.
func serversFor(file *config.File, name string) []string {
	tc := file.Host.WithDefaults().Tools
	if tc.Prefix != catalog.PrefixAlways {
		return nil
	}
	var names []string
	for _, sc := range file.Host.Servers {
		if strings.HasPrefix(name, sc.Name+tc.Separator) {
			names = append(names, sc.Name)
		}
	}
	for _, sp := range file.ToolPlugins {
		if strings.HasPrefix(name, sp.Name+tc.Separator) {
			names = append(names, sp.Name)
		}
	}
	return names
}

// connectUsage is the usage of each command that connectOnce parses.
var connectUsage = map[string]string{
	"tools": "usage: mcphost tools CONFIG [SERVER...] [--toolset NAME] [--json | --format mcp|openai|anthropic|gemini | --stats] [--allow-failed]\n\n--toolset prints what the toolset's endpoint (/mcp/NAME) serves; --stats prints each\nserver's and toolset's catalog in bytes and tokens (" + tokens.Encoding + "), before\npolicies and after them. Exit status 1 when a server does not connect (the catalog\nof the others is still printed), unless --allow-failed.",
	"call":  "usage: mcphost call CONFIG NAME [JSON-ARGUMENTS] [--json]",
}

// errMisuse, from a pick function of connectOnce, is arguments that do
// not fit the command's usage.
var errMisuse = errors.New("misuse")

func runTools(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	var asJSON, allowFailed, stats bool
	var format, tsName string
	// Only the servers named, if any, are started; with a toolset and no
	// server named, its servers.
	e, _, err := connectOnce(ctx, "tools", args, stdout, stderr, func(fs *flagSetT) {
		fs.BoolVar(&asJSON, "json", false, "print the catalog as JSON")
		fs.StringVar(&format, "format", "", "print the catalog as a model API's tool definitions: mcp, openai, anthropic or gemini")
		fs.BoolVar(&allowFailed, "allow-failed", false, "exit 0 even when a server does not connect")
		fs.StringVar(&tsName, "toolset", "", "print what the toolset NAME serves at /mcp/NAME")
		fs.BoolVar(&stats, "stats", false, "print each server's and toolset's size in bytes and tokens, before and after policies")
	}, func(file *config.File, names []string) ([]string, error) {
		if i := slices.IndexFunc(file.Host.Toolsets, func(t toolset.Toolset) bool { return t.Name == tsName }); i >= 0 && len(names) == 0 {
			names = file.Host.Toolsets[i].Servers
		}
		return serversNamed(file, names)
	})
	if err != nil {
		return err
	}
	defer e.Close()
	// After the catalog: what did connect is worth seeing either way.
	defer func() {
		if err != nil || allowFailed {
			return
		}
		var down []string
		for _, st := range e.Host().Statuses() {
			if st.State != upstream.StateConnected {
				down = append(down, st.Name)
			}
		}
		if len(down) > 0 {
			fmt.Fprintf(stderr, "mcphost tools: %s did not connect (above); --allow-failed exits 0 with the others' catalog\n", plural(len(down), "server"))
			err = exitError(1)
		}
	}()
	if tsName != "" {
		if ctx, err = toolsetContext(ctx, e, tsName); err != nil {
			return err
		}
	}
	tools, err := e.Host().Tools(ctx, cliCaller)
	if err != nil {
		return err
	}
	if stats {
		return printStats(stdout, e, tools, tsName, asJSON)
	}
	if format != "" {
		set, err := toolformat.Convert(toolformat.Provider(format), tools)
		if err != nil {
			return err
		}
		var out bytes.Buffer
		if err := json.Indent(&out, set.Definitions, "", "  "); err != nil {
			return err
		}
		fmt.Fprintln(stdout, out.String())
		return nil
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Tools   []abi.Tool        `json:"tools"`
			Servers []upstream.Status `json:"servers"`
		}{tools, e.Host().Statuses()})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTITLE\tSERVER\tTOOL")
	for _, t := range tools {
		title := t.Title
		if title == "" && t.Annotations != nil {
			title = t.Annotations.Title
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, oneLine(title), t.Server, t.Tool)
	}
	return tw.Flush()
}

func runCall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var asJSON bool
	flags := func(fs *flagSetT) { fs.BoolVar(&asJSON, "json", false, "print the whole result as JSON") }
	// Only the servers whose prefix the name carries are started; should
	// none of them serve it, every server is.
	picked := false
	e, rest, err := connectOnce(ctx, "call", args, stdout, stderr, flags, func(file *config.File, rest []string) ([]string, error) {
		if len(rest) < 1 || len(rest) > 2 {
			return nil, errMisuse
		}
		names := serversFor(file, rest[0])
		picked = len(names) > 0
		return names, nil
	})
	if err != nil {
		return err
	}
	defer func() { e.Close() }() // the retry below may replace e (nil if it fails: Close is nil-safe)
	var arguments json.RawMessage
	if len(rest) == 2 {
		arguments = json.RawMessage(rest[1])
		var obj map[string]any
		if err := json.Unmarshal(arguments, &obj); err != nil {
			return fmt.Errorf("arguments must be a JSON object: %w", err)
		}
	}
	res, err := e.Host().CallTool(ctx, cliCaller, rest[0], arguments)
	if errors.Is(err, gateway.ErrUnknownTool) && picked {
		e.Close()
		if e, _, err = connectOnce(ctx, "call", args, stdout, stderr, flags, nil); err != nil {
			return err
		}
		res, err = e.Host().CallTool(ctx, cliCaller, rest[0], arguments)
	}
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		printResult(stdout, res)
	}
	if res.IsError {
		return exitError(1)
	}
	return nil
}

// printResult prints text content as is and anything else as JSON.
func printResult(w io.Writer, res *mcp.CallToolResult) {
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			fmt.Fprintln(w, strings.TrimRight(tc.Text, "\n"))
			continue
		}
		b, _ := json.Marshal(c)
		fmt.Fprintln(w, string(b))
	}
	if res.StructuredContent != nil && len(res.Content) == 0 {
		b, _ := json.MarshalIndent(res.StructuredContent, "", "  ")
		fmt.Fprintln(w, string(b))
	}
}

// runStatus asks a running mcphost for its upstreams' states.
func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("status", "usage: mcphost status URL [--token TOKEN] [--json]   (URL like http://127.0.0.1:7700)", stdout, stderr)
	token := fs.String("token", "", "bearer token, if the endpoint requires one (default $MCPHOST_TOKEN)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fs.misuse()
	}
	base := strings.TrimSuffix(strings.TrimSuffix(pos[0], "/mcp"), "/")
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/status", nil)
	if err != nil {
		return err
	}
	if *token == "" {
		*token = envToken()
	}
	if *token != "" {
		req.Header.Set("Authorization", "Bearer "+*token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", req.URL, resp.Status)
	}
	var doc struct {
		Servers []upstream.Status     `json:"servers"`
		Plugins []plugins.Status      `json:"plugins,omitempty"`
		Reload  *gateway.ReloadStatus `json:"reload,omitempty"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&doc); err != nil {
		return fmt.Errorf("%s: bad status document: %w", req.URL, err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	sts := doc.Servers
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTRANSPORT\tSTATE\tPID\tTOOLS\tIN FLIGHT\tCLIENT SESSIONS\tRECONNECTS\tSINCE\tERROR")
	for _, st := range sts {
		pid := "-"
		if st.PID > 0 {
			pid = strconv.Itoa(st.PID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", st.Name, st.Transport, st.State, pid, st.Tools, st.InFlight, st.ClientSessions, st.Reconnects,
			st.Since.Format(time.RFC3339), oneLine(st.Error))
	}
	if len(doc.Plugins) > 0 {
		fmt.Fprintln(tw, "")
		fmt.Fprintln(tw, "PLUGIN\tSTATE\tHOOKS\tCALLS\tREUSED\tFAILURES\tCRASHES\tLAST ERROR")
		for _, p := range doc.Plugins {
			hooks := strings.Join(p.Hooks, ",")
			if p.Kind == plugins.KindTools {
				// A tool plugin: its tools, served as server p.Name above.
				hooks = fmt.Sprintf("tools (%d)", len(p.Tools))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", p.Name, p.State, hooks, p.Calls, p.Reused, p.Failures, p.Crashes, oneLine(p.LastError))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, st := range sts {
		if st.AuthURL != "" {
			fmt.Fprintf(stdout, "\nserver %s needs an OAuth login: open\n  %s\n", st.Name, st.AuthURL)
		}
		if u := st.Users; u != nil {
			fmt.Fprintf(stdout, "\nserver %s authorizes each caller (oauth per_user): %d authorized, %d with a login link out\n", st.Name, u.Authorized, u.Authorizing)
		}
	}
	if doc.Reload != nil {
		fmt.Fprintln(stdout, "")
		writeReload(stdout, doc.Reload)
	}
	return nil
}

// writeReload prints the latest reload's line of status. Its label is the
// latest reload's kind; the failures in a row are split by kind when they
// are not all of that one.
func writeReload(w io.Writer, r *gateway.ReloadStatus) {
	at := r.At.Format(time.RFC3339)
	if r.OK {
		fmt.Fprintf(w, "last reload (%s): ok at %s\n", r.Trigger, at)
		return
	}
	row := fmt.Sprintf("%d in a row", r.Failures)
	if r.FailuresByTrigger[r.Trigger] != r.Failures {
		row = plural(r.Failures, "failed reload") + " in a row"
		if len(r.FailuresByTrigger) > 0 {
			var kinds []string
			for _, k := range slices.Sorted(maps.Keys(r.FailuresByTrigger)) {
				kinds = append(kinds, fmt.Sprintf("%s %d", k, r.FailuresByTrigger[k]))
			}
			row += ": " + strings.Join(kinds, ", ")
		}
	}
	fmt.Fprintf(w, "last reload (%s): FAILED at %s (%s; the running config stays): %s\n", r.Trigger, at, row, oneLine(r.Error))
}

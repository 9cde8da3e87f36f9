package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host"
	"github.com/mcphost-project/mcphost/internal/config"
	"github.com/mcphost-project/mcphost/plugins"
)

// cliCaller is who policies see when the CLI lists or calls tools.
var cliCaller = abi.Caller{Transport: host.DownstreamEmbedded, ClientName: "mcphost-cli"}

func runValidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("validate", stderr)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return exitError(2)
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "usage: mcphost validate CONFIG")
		return exitError(2)
	}
	file, diags := config.Load(pos[0])
	if !diags.HasErrors() {
		checkPlugins(ctx, file, diags)
	}
	if err := reportDiags(diags, stderr); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: ok (%s, %s)\n", pos[0], plural(len(file.Host.Servers), "server"), plural(len(file.Plugins), "plugin"))
	return nil
}

// checkPlugins loads every plugin's module as a reload would, short of
// running it (plugins.Check), and adds a diagnostic at its source for each
// one that would not load.
func checkPlugins(ctx context.Context, file *config.File, diags *config.Diagnostics) {
	if len(file.Plugins) == 0 {
		return
	}
	rt, err := plugins.NewRuntime(ctx, plugins.RuntimeOptions{CacheDir: file.Runtime.CacheDir, Builtin: builtinPolicy})
	if err != nil {
		diags.Add(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot check plugins",
			Detail: fmt.Sprintf("Starting the plugin runtime failed: %s.", err)})
		return
	}
	defer rt.Close(context.WithoutCancel(ctx))
	for _, spec := range file.Plugins {
		err := plugins.Check(ctx, rt, spec)
		if err == nil {
			continue
		}
		d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Plugin does not load",
			Detail: fmt.Sprintf("Plugin %q: %s. Point source at a WebAssembly module built for mcphost (see mcphost plugin inspect FILE).", spec.Name, oneLine(err.Error()))}
		if r, ok := file.SourceRange(spec.Name); ok {
			d.Subject = r.Ptr()
		}
		diags.Add(d)
	}
}

// connectOnce loads a config, connects every upstream, and reports the ones
// that failed on stderr. The caller closes the engine.
func connectOnce(ctx context.Context, name string, args []string, stderr io.Writer, extra func(*flagSetT)) (*engine, []string, error) {
	fs := newFlagSet(name, stderr)
	var lf logFlags
	lf.register(fs, "warn")
	if extra != nil {
		extra(fs)
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return nil, nil, exitError(2)
	}
	if len(pos) < 1 {
		return nil, nil, errUsageFor(name, stderr)
	}
	log, err := lf.logger(stderr)
	if err != nil {
		return nil, nil, err
	}
	file, err := loadConfig(pos[0], stderr)
	if err != nil {
		return nil, nil, err
	}
	e, err := startEngine(ctx, file, log, false)
	if err != nil {
		return nil, nil, err
	}
	for _, st := range e.host.Statuses() {
		if st.State != host.StateConnected {
			fmt.Fprintf(stderr, "server %s: %s: %s\n", st.Name, st.State, oneLine(st.Error))
		}
	}
	return e, pos[1:], nil
}

func errUsageFor(name string, stderr io.Writer) error {
	switch name {
	case "tools":
		fmt.Fprintln(stderr, "usage: mcphost tools CONFIG [--json]")
	case "call":
		fmt.Fprintln(stderr, "usage: mcphost call CONFIG NAME [JSON-ARGUMENTS] [--json]")
	}
	return exitError(2)
}

func runTools(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var asJSON bool
	e, rest, err := connectOnce(ctx, "tools", args, stderr, func(fs *flagSetT) {
		fs.BoolVar(&asJSON, "json", false, "print the catalog as JSON")
	})
	if err != nil {
		return err
	}
	defer e.close()
	if len(rest) != 0 {
		return errUsageFor("tools", stderr)
	}
	tools, err := e.host.Tools(ctx, cliCaller)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Tools   []abi.Tool    `json:"tools"`
			Servers []host.Status `json:"servers"`
		}{tools, e.host.Statuses()})
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
	e, rest, err := connectOnce(ctx, "call", args, stderr, func(fs *flagSetT) {
		fs.BoolVar(&asJSON, "json", false, "print the whole result as JSON")
	})
	if err != nil {
		return err
	}
	defer e.close()
	if len(rest) < 1 || len(rest) > 2 {
		return errUsageFor("call", stderr)
	}
	var arguments json.RawMessage
	if len(rest) == 2 {
		arguments = json.RawMessage(rest[1])
		var obj map[string]any
		if err := json.Unmarshal(arguments, &obj); err != nil {
			return fmt.Errorf("arguments must be a JSON object: %w", err)
		}
	}
	res, err := e.host.CallTool(ctx, cliCaller, rest[0], arguments)
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
	fs := newFlagSet("status", stderr)
	token := fs.String("token", "", "bearer token, if the endpoint requires one (default $MCPHOST_TOKEN)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return exitError(2)
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "usage: mcphost status URL [--token TOKEN] [--json]   (URL like http://127.0.0.1:7700)")
		return exitError(2)
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
		Servers []host.Status    `json:"servers"`
		Plugins []plugins.Status `json:"plugins"`
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
	fmt.Fprintln(tw, "SERVER\tTRANSPORT\tSTATE\tTOOLS\tIN FLIGHT\tCLIENT SESSIONS\tRECONNECTS\tSINCE\tERROR")
	for _, st := range sts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", st.Name, st.Transport, st.State, st.Tools, st.InFlight, st.ClientSessions, st.Reconnects,
			st.Since.Format(time.RFC3339), oneLine(st.Error))
	}
	if len(doc.Plugins) > 0 {
		fmt.Fprintln(tw, "")
		fmt.Fprintln(tw, "PLUGIN\tSTATE\tHOOKS\tCALLS\tREUSED\tFAILURES\tCRASHES\tLAST ERROR")
		for _, p := range doc.Plugins {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", p.Name, p.State, strings.Join(p.Hooks, ","), p.Calls, p.Reused, p.Failures, p.Crashes, oneLine(p.LastError))
		}
	}
	return tw.Flush()
}

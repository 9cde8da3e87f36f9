package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/mcphost-project/mcphost/host/engine"
)

const toolsetsUsage = `usage: mcphost toolsets list|get|set|delete [NAME] [flags]

Manages the toolsets of a running mcphost through its admin API: named
parts of each caller's catalog, each served at /mcp/NAME (and /sse/NAME) on
the MCP listener under the caller's identity and policies, beside the
toolset blocks of the config file, which are listed but cannot be changed
here. A change is in effect at once, on every replica within store.poll.

  list                          the toolsets and where each comes from
  get NAME                      one toolset
  set NAME [--server S ...] [--tool GLOB ...] [--exclude GLOB ...]
           [--exposure list|search|code] [--always NAME ...] [--description D]
                                add or replace a toolset (globs match a tool's
                                name at its server; * is any run of characters)
      mcphost toolsets set ide --server fs --tool 'read_*' --exclude read_media_file
  delete NAME                   remove a toolset; its endpoint answers 404

` + adminFlagsUsage

var toolsetsArgs = map[string]string{
	"list":   " [--admin URL] [--key KEY] [--json]",
	"get":    " NAME",
	"set":    " NAME [--server S ...] [--tool GLOB ...] [--exclude GLOB ...] [--exposure E] [--always NAME ...] [--description D]",
	"delete": " NAME",
}

// runToolsets is `mcphost toolsets`: a client of the admin API's
// /v1/toolsets.
func runToolsets(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, toolsetsUsage)
		return exitError(2)
	}
	if isHelp(args[0]) {
		fmt.Fprintln(stdout, toolsetsUsage)
		return nil
	}
	sub, rest := args[0], args[1:]
	if _, ok := toolsetsArgs[sub]; !ok {
		fmt.Fprintf(stderr, "mcphost toolsets: unknown command %q\n\n%s\n", sub, toolsetsUsage)
		return exitError(2)
	}
	fs := newFlagSet("toolsets "+sub, fmt.Sprintf("usage: mcphost toolsets %s%s\n\nRun \"mcphost toolsets help\" for more.", sub, toolsetsArgs[sub]), stdout, stderr)
	var o serversOptions
	o.flags(fs)
	var servers, tools, exclude, always listFlag
	var exposure, description string
	if sub == "set" {
		fs.Var(&servers, "server", "a server whose tools it takes (repeatable; every server when none)")
		fs.Var(&tools, "tool", "a glob over tool names at their server (repeatable; every tool when none)")
		fs.Var(&exclude, "exclude", "a glob of tools to leave out (repeatable)")
		fs.Var(&always, "always", "an exposed name (or path.Match pattern) listed whatever the exposure (repeatable)")
		fs.StringVar(&exposure, "exposure", "", "list (the default), search or code")
		fs.StringVar(&description, "description", "", "what the toolset is for")
	}
	pos, err := fs.parse(rest)
	if err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	want := 1 // the toolset's name
	if sub == "list" {
		want = 0
	}
	if len(pos) != want {
		fmt.Fprintf(stderr, "mcphost toolsets %s: takes %d argument(s): mcphost toolsets %s%s\nRun \"mcphost toolsets\" for usage.\n", sub, want, sub, toolsetsArgs[sub])
		return exitError(2)
	}
	o.resolve(given["admin"])
	c := &adminClient{base: o.base, key: o.key, asJSON: o.asJSON, stdout: stdout, stderr: stderr, hc: &http.Client{}, command: "toolsets"}
	switch sub {
	case "list":
		return c.listToolsets(ctx)
	case "get":
		return c.printToolset(c.call(ctx, adminQuick, "GET", toolsetPath(pos[0]), nil, nil))
	case "set":
		body := map[string]any{"servers": []string(servers), "tools": []string(tools), "exclude": []string(exclude),
			"always": []string(always), "exposure": exposure, "description": description}
		return c.printToolset(c.call(ctx, adminQuick, "PUT", toolsetPath(pos[0]), body, nil))
	default: // delete
		if _, err := c.call(ctx, adminQuick, "DELETE", toolsetPath(pos[0]), nil, nil); err != nil {
			return err
		}
		if !c.asJSON {
			fmt.Fprintf(stdout, "removed toolset %s\n", pos[0])
		}
		return nil
	}
}

func toolsetPath(name string) string { return "/v1/toolsets/" + url.PathEscape(name) }

func (c *adminClient) listToolsets(ctx context.Context) error {
	data, err := c.call(ctx, adminQuick, "GET", "/v1/toolsets", nil, nil)
	if err != nil {
		return err
	}
	if c.asJSON {
		_, err := c.stdout.Write(data)
		return err
	}
	var list struct {
		Toolsets []engine.ToolsetInfo `json:"toolsets"`
	}
	if err := c.decodeAnswer(data, &list, "a list of toolsets"); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tEXPOSURE\tSERVERS\tTOOLS\tEXCLUDE\tPROBLEM")
	for _, t := range list.Toolsets {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.Source, dash(t.Exposure), dash(strings.Join(t.Servers, ",")),
			dash(strings.Join(t.Tools, ",")), dash(strings.Join(t.Exclude, ",")), dash(t.Problem))
	}
	return tw.Flush()
}

// printToolset prints an answer of one toolset.
func (c *adminClient) printToolset(data []byte, err error) error {
	if err != nil {
		return err
	}
	if c.asJSON {
		_, err := c.stdout.Write(data)
		return err
	}
	var t engine.ToolsetInfo
	if err := c.decodeAnswer(data, &t, "a toolset"); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "toolset %s (%s): served at /mcp/%s and /sse/%s\n", t.Name, t.Source, t.Name, t.Name)
	for _, f := range [][2]string{{"description", t.Description}, {"servers", strings.Join(t.Servers, ", ")}, {"tools", strings.Join(t.Tools, ", ")},
		{"exclude", strings.Join(t.Exclude, ", ")}, {"exposure", t.Exposure}, {"always", strings.Join(t.Always, ", ")}, {"problem", t.Problem}} {
		if f[1] != "" {
			fmt.Fprintf(c.stdout, "  %-12s %s\n", f[0]+":", f[1])
		}
	}
	return nil
}

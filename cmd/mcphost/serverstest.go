package main

// `mcphost servers test`: connect to a definition without adding it, here
// or through the admin API, and print what it serves or what failed.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// test asks the running mcphost to connect to a definition.
func (c *adminClient) test(ctx context.Context, spec config.ServerSpec) error {
	data, err := c.call(ctx, adminSlow, "POST", "/v1/servers:test", spec, nil)
	if err != nil {
		return err
	}
	var res upstream.ProbeResult
	if err := c.decodeAnswer(data, &res, "a test result"); err != nil {
		return err
	}
	if c.asJSON {
		if err := c.printJSON(data); err != nil {
			return err
		}
		if !res.OK {
			return exitError(1)
		}
		return nil
	}
	return printProbe(&res, c.stdout, c.stderr)
}

// testLocal checks a definition as the admin API would and probes it in
// this process: the "test connection" without a running mcphost. A
// relative cwd is taken from the current directory.
func testLocal(ctx context.Context, spec config.ServerSpec, asJSON bool, stdout, stderr io.Writer) error {
	if spec.Name == "" {
		spec.Name = "test"
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	// Server anchors a relative cwd at the directory of a config path.
	sc, err := spec.Server(filepath.Join(wd, "mcphost-servers-test"))
	if err == nil {
		err = config.CheckCommand(sc)
	}
	if err != nil {
		return reportSpecError(stderr, "Invalid server definition", err)
	}
	res := upstream.Probe(ctx, sc, nil)
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
		if !res.OK {
			return exitError(1)
		}
		return nil
	}
	return printProbe(res, stdout, stderr)
}

// printProbe prints what a test found, or, on stderr, the stage that
// failed, its error and what the server printed last; a failure is exit
// status 1.
func printProbe(res *upstream.ProbeResult, stdout, stderr io.Writer) error {
	t := res.Timing
	timing := fmt.Sprintf("connect %s ms, list %s ms, total %s ms", msText(t.ConnectMs), msText(t.ListMs), msText(t.TotalMs))
	if !res.OK {
		fmt.Fprintf(stderr, "mcphost servers: test failed (%s): %s\n", res.Stage, res.Error)
		if tail := strings.TrimRight(res.Stderr, "\n"); tail != "" {
			fmt.Fprintln(stderr, "the server's last lines on stderr:")
			for _, l := range strings.Split(tail, "\n") {
				fmt.Fprintln(stderr, "  "+l)
			}
		}
		fmt.Fprintln(stderr, "timing:", timing)
		return exitError(1)
	}
	server := "?"
	if si := res.ServerInfo; si != nil {
		server = si.Name
		if si.Version != "" {
			server += " " + si.Version
		}
		if si.Title != "" && si.Title != si.Name {
			server += " (" + si.Title + ")"
		}
	}
	fmt.Fprintf(stdout, "server:    %s\n", server)
	fmt.Fprintf(stdout, "protocol:  %s\n", res.ProtocolVersion)
	fmt.Fprintf(stdout, "tools:     %d\n", len(res.Tools))
	tw := tabwriter.NewWriter(stdout, 0, 4, 1, ' ', 0)
	for _, tl := range res.Tools {
		desc, _, _ := strings.Cut(strings.TrimSpace(tl.Description), "\n")
		if r := []rune(desc); len(r) > 100 {
			desc = string(r[:97]) + "..."
		}
		fmt.Fprintf(tw, "  %s\t— %s\n", tl.Name, desc)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "prompts:   %d\n", len(res.Prompts))
	fmt.Fprintf(stdout, "resources: %d (and %s)\n", len(res.Resources), plural(len(res.ResourceTemplates), "template"))
	fmt.Fprintf(stdout, "timing:    %s\n", timing)
	return nil
}

func msText(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

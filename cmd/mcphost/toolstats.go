package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/engine"
	"github.com/mcphost-project/mcphost/host/tokens"
	"github.com/mcphost-project/mcphost/host/toolset"
	"github.com/mcphost-project/mcphost/internal/suggest"
)

// toolsetContext returns ctx carrying the toolset called name of the
// running configuration (the file's and the store's), as its endpoint's
// requests do, so that the host's views keep to it.
func toolsetContext(ctx context.Context, e *engine.Engine, name string) (context.Context, error) {
	list := e.Host().Config().Toolsets
	ts := toolset.Named(list, name)
	if ts == nil {
		names := make([]string, len(list))
		for i, t := range list {
			names[i] = t.Name
		}
		if len(names) == 0 {
			return ctx, fmt.Errorf("no toolset %q: the config defines none (a toolset block adds one)", name)
		}
		return ctx, fmt.Errorf("no toolset %q.%s Toolsets: %s", name, suggest.DidYouMean(name, names), strings.Join(names, ", "))
	}
	return toolset.NewContext(ctx, ts), nil
}

// printStats prints `mcphost tools --stats`: each server's and toolset's
// catalog in bytes and tokens, before policies and after them (after: the
// CLI's view, tools).
func printStats(w io.Writer, e *engine.Engine, after []abi.Tool, tsName string, asJSON bool) error {
	before := e.Host().Catalog()
	toolsets := e.Host().Config().Toolsets
	if tsName != "" {
		ts := toolset.Named(toolsets, tsName)
		toolsets = []toolset.Toolset{*ts}
		var in []abi.Tool
		for _, t := range before {
			if ts.Includes(t.Server, t.Tool) {
				in = append(in, t)
			}
		}
		before = in
	}
	r, err := tokens.Catalog(before, after, toolsets)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tTOOLS\tBYTES\tTOKENS\t\tTOOLS\tBYTES\tTOKENS\tSAVED\t")
	row := func(kind string, r tokens.Row) {
		saved := "-"
		if r.Before.Tokens > 0 {
			saved = fmt.Sprintf("%d%%", (r.Before.Tokens-r.After.Tokens)*100/r.Before.Tokens)
		}
		fmt.Fprintf(tw, "%s %s\t%d\t%d\t%d\t→\t%d\t%d\t%d\t%s\t\n", kind, r.Name, r.Before.Tools, r.Before.Bytes, r.Before.Tokens,
			r.After.Tools, r.After.Bytes, r.After.Tokens, saved)
	}
	for _, s := range r.Servers {
		row("server", s)
	}
	for _, t := range r.Toolsets {
		row("toolset", t)
	}
	row("", r.Total)
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "before policies → after them (as %s sees the catalog); tokens of %s\n", cliCaller.ClientName, r.Encoding)
	return err
}

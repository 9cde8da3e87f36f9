package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mcphost-project/mcphost/abi/decision"
	"github.com/mcphost-project/mcphost/host/audit"
)

const auditUsage = `usage: mcphost audit tail|query [CONFIG] [flags]

Reads the audit log (docs/audit.md): the file an audit block writes
(--file), or the lines a running mcphost keeps in its store, through its
admin API. Given CONFIG, its audit file, else its admin API; without it or
--file, the admin API at --admin.

  tail [--lines N] [--follow]   the last N entries (default 10), oldest first;
                                with --follow, each new one as it comes, until
                                interrupted
      mcphost audit tail config.hcl --follow
      mcphost audit tail --file audit.jsonl --follow
  query [--limit N]             the newest N entries that match (default 100),
                                newest first
      mcphost audit query --outcome denied --since 1h
      mcphost audit query --subject alice --tool read_file --json

Filters (both commands):
  --server S  --tool T  --subject S  --outcome O  --kind call|listing|request
  --since T  --until T   a time in RFC 3339 (2026-11-25T17:00:00Z), or a
                         duration back from now (90m, 24h)
Flags:
  --file F      read this file, and the files rotated from it (F.1, F.2, ...)
  --admin URL   the admin API (default $MCPHOST_ADMIN, else ` + defaultAdminURL + `)
  --key KEY     a listen.auth key in an admin group (default $MCPHOST_ADMIN_KEY,
                else $MCPHOST_TOKEN)
  --before C    query through the admin API: the page after the one that
                printed "more: --before C"
  --json        print each entry as its JSON line`

// auditOptions are the flags of `mcphost audit`.
type auditOptions struct {
	serversOptions
	file   string
	filter auditFilter
	since  string
	until  string
	lines  int
	limit  int
	before string
	follow bool
}

// auditSubUsage is the usage of each audit command, before its flags.
var auditSubUsage = map[string]string{
	"tail":  "usage: mcphost audit tail [CONFIG] [--lines N] [--follow] [FILTERS] [--file F | --admin URL] [--json]\n\nRun \"mcphost help audit\" for more.",
	"query": "usage: mcphost audit query [CONFIG] [--limit N] [--before C] [FILTERS] [--file F | --admin URL] [--json]\n\nRun \"mcphost help audit\" for more.",
}

// runAudit is `mcphost audit`.
func runAudit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, auditUsage)
		return exitError(2)
	}
	sub := args[0]
	switch sub {
	case "help", "-h", "-help", "--help":
		fmt.Fprintln(stdout, auditUsage)
		return nil
	case "tail", "query":
	default:
		fmt.Fprintf(stderr, "mcphost audit: unknown command %q\n\n%s\n", sub, auditUsage)
		return exitError(2)
	}
	fs := newFlagSet("audit "+sub, auditSubUsage[sub], stdout, stderr)
	var o auditOptions
	fs.StringVar(&o.file, "file", "", "read this audit file (and F.1, F.2, ...)")
	fs.StringVar(&o.admin, "admin", "", "admin API URL (default $MCPHOST_ADMIN, else "+defaultAdminURL+")")
	fs.StringVar(&o.key, "key", "", "admin credential (default $MCPHOST_ADMIN_KEY, else $MCPHOST_TOKEN)")
	fs.BoolVar(&o.asJSON, "json", false, "print each entry as its JSON line")
	fs.StringVar(&o.filter.server, "server", "", "only calls to this server")
	fs.StringVar(&o.filter.tool, "tool", "", "only calls of this upstream tool")
	fs.StringVar(&o.filter.subject, "subject", "", "only calls of this caller")
	fs.StringVar(&o.filter.outcome, "outcome", "", "only calls that ended so (ok, denied, tool_error, ...)")
	fs.StringVar(&o.filter.kind, "kind", "", `only "call", "listing" or "request" entries`)
	fs.StringVar(&o.since, "since", "", "only entries at or after this time (RFC 3339, or a duration back from now)")
	fs.StringVar(&o.until, "until", "", "only entries before this time")
	if sub == "tail" {
		fs.IntVar(&o.lines, "lines", 10, "entries to print first")
		fs.BoolVar(&o.follow, "follow", false, "then print each new entry as it comes")
	} else {
		fs.IntVar(&o.limit, "limit", 100, "entries at most (1 to 1000 through the admin API)")
		fs.StringVar(&o.before, "before", "", "the cursor of the next page (admin API)")
	}
	pos, err := fs.parse(args[1:])
	if err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	usage := func(msg string) error {
		fmt.Fprintf(stderr, "mcphost audit %s: %s\nRun \"mcphost audit help\" for usage.\n", sub, msg)
		return exitError(2)
	}
	if len(pos) == 1 && o.file == "" && !given["admin"] {
		// A config names where its own lines are: its audit file, else
		// its admin API (the store), rather than a default address that
		// may be another instance's.
		file, err := loadConfig(pos[0], stderr)
		if err != nil {
			return err
		}
		switch {
		case file.Audit != nil && file.Audit.File != "" && file.Audit.File != audit.Stdout:
			o.file = file.Audit.File
		case file.Admin != nil:
			o.admin, given["admin"] = file.Admin.HTTP, true
		default:
			fmt.Fprintf(stderr, "mcphost audit %s: %s writes no audit file and has no admin API to read its store through; add an audit block with a file, or an admin block\n", sub, pos[0])
			return exitError(1)
		}
		pos = nil
	}
	switch {
	case len(pos) > 0:
		return usage(fmt.Sprintf("unexpected arguments %q", pos))
	case o.file != "" && given["admin"]:
		return usage("--file or --admin, not both")
	case o.file != "" && o.before != "":
		return usage("--before pages through the admin API; a file is read whole")
	case o.lines < 0 || given["limit"] && o.limit < 1:
		return usage("--lines and --limit take a positive number")
	case o.filter.kind != "" && o.filter.kind != audit.KindCall && o.filter.kind != audit.KindListing && o.filter.kind != audit.KindRequest:
		return usage(`--kind is "call", "listing" or "request"`)
	}
	now := time.Now()
	if o.filter.since, err = parseWhen(o.since, now); err != nil {
		return usage("--since: " + err.Error())
	}
	if o.filter.until, err = parseWhen(o.until, now); err != nil {
		return usage("--until: " + err.Error())
	}

	var src auditSource
	if o.file != "" {
		src = &fileSource{path: o.file, warn: stderr}
	} else {
		o.resolve(given["admin"])
		src = &adminSource{c: &adminClient{base: o.base, key: o.key, command: "audit", stdout: stdout, stderr: stderr, hc: &http.Client{}}}
	}
	p := &auditPrinter{w: stdout, asJSON: o.asJSON}
	if sub == "query" {
		lines, next, err := src.newest(ctx, o.filter, o.limit, o.before)
		if err != nil {
			return auditError(stderr, err)
		}
		if err := p.print(lines...); err != nil {
			return err
		}
		if next != "" {
			fmt.Fprintf(stderr, "more: --before %s\n", next)
		}
		return nil
	}
	var lines []auditLine
	if o.lines > 0 {
		if lines, _, err = src.newest(ctx, o.filter, o.lines, ""); err != nil {
			return auditError(stderr, err)
		}
	}
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
	if err := p.print(lines...); err != nil {
		return err
	}
	if !o.follow {
		return nil
	}
	var last *auditLine
	if len(lines) > 0 {
		last = &lines[len(lines)-1]
	}
	if err := src.follow(ctx, o.filter, last, p.print); err != nil && ctx.Err() == nil {
		return auditError(stderr, err)
	}
	return nil
}

// auditError prints err, unless the admin client already did (an exit
// status).
func auditError(stderr io.Writer, err error) error {
	if _, ok := err.(exitError); ok {
		return err
	}
	fmt.Fprintf(stderr, "mcphost audit: %v\n", err)
	return exitError(1)
}

// parseWhen reads a time in RFC 3339, or a duration back from now.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%q is neither a time in RFC 3339 (2026-11-25T17:00:00Z) nor a duration back from now (90m)", s)
	}
	return now.Add(-d), nil
}

// auditLine is one entry: its JSON line, compact, and what it says.
type auditLine struct {
	raw []byte
	e   *audit.Entry
}

// auditFilter is what the filter flags select.
type auditFilter struct {
	server, tool, subject, outcome, kind string
	since, until                         time.Time
}

func (f auditFilter) match(e *audit.Entry) bool {
	kind := e.Kind
	if kind == "" {
		kind = audit.KindCall
	}
	return (f.server == "" || e.Server == f.server) && (f.tool == "" || e.Tool == f.tool) &&
		(f.subject == "" || e.Caller.Subject == f.subject) && (f.outcome == "" || e.Outcome == f.outcome) &&
		(f.kind == "" || kind == f.kind) && (f.since.IsZero() || !e.Time.Before(f.since)) &&
		(f.until.IsZero() || e.Time.Before(f.until))
}

// query is the filter as the admin API's query parameters.
func (f auditFilter) query() url.Values {
	v := url.Values{}
	for _, p := range [][2]string{{"server", f.server}, {"tool", f.tool}, {"subject", f.subject}, {"outcome", f.outcome}, {"kind", f.kind}} {
		if p[1] != "" {
			v.Set(p[0], p[1])
		}
	}
	if !f.since.IsZero() {
		v.Set("since", f.since.UTC().Format(time.RFC3339Nano))
	}
	if !f.until.IsZero() {
		v.Set("until", f.until.UTC().Format(time.RFC3339Nano))
	}
	return v
}

// auditSource is where the entries come from: a file or the admin API.
type auditSource interface {
	// newest returns up to n entries f selects, newest first, from the
	// page before (a cursor; "" for the newest), and the next page's
	// cursor when there is one.
	newest(ctx context.Context, f auditFilter, n int, before string) ([]auditLine, string, error)
	// follow calls emit with each entry written after last (nil: after
	// what newest read, or from now), oldest first, until ctx ends.
	follow(ctx context.Context, f auditFilter, last *auditLine, emit func(...auditLine) error) error
}

// auditPrinter prints entries as JSON lines or aligned columns.
type auditPrinter struct {
	w       io.Writer
	asJSON  bool
	started bool
}

// Column widths: fixed, so that entries printed as they come stay aligned.
const auditColumns = "%-23s  %-14s  %-16s  %-32s  %9s  %s\n"

func (p *auditPrinter) print(lines ...auditLine) error {
	for _, l := range lines {
		var err error
		if p.asJSON {
			_, err = fmt.Fprintf(p.w, "%s\n", l.raw)
		} else {
			if !p.started {
				if _, err = fmt.Fprintf(p.w, auditColumns, "TIME (UTC)", "OUTCOME", "SUBJECT", "NAME", "MS", "POLICIES"); err != nil {
					return err
				}
			}
			e := l.e
			_, err = fmt.Fprintf(p.w, auditColumns, e.Time.UTC().Format("2006-01-02 15:04:05.000"), fit(e.Outcome, 14),
				fit(orDash(e.Caller.Subject), 16), fit(e.Name, 32), strconv.FormatFloat(e.DurationMs, 'f', 2, 64), decisionsText(e.Decisions))
		}
		if err != nil {
			return err
		}
		p.started = true
	}
	return nil
}

// decisionsText says what the policies did, leaving out those that let
// the call or result through untouched.
func decisionsText(ds []decision.Decision) string {
	var parts []string
	for _, d := range ds {
		who := clean(d.Plugin)
		switch d.Action {
		case decision.Allow, decision.Unchanged:
		case decision.Deny:
			switch {
			case len(d.Tools) > 0:
				parts = append(parts, who+" hid "+clean(strings.Join(d.Tools, ",")))
			case d.Hook == "tool_result":
				parts = append(parts, who+" withheld the result: "+clean(d.Reason))
			default:
				parts = append(parts, who+" denied: "+clean(d.Reason))
			}
		case decision.Rewrite:
			parts = append(parts, who+" rewrote "+clean(strings.Join(d.Paths, ",")))
		case decision.Changed:
			parts = append(parts, who+" changed "+clean(strings.Join(d.Paths, ",")))
		case decision.Respond:
			parts = append(parts, who+" answered")
		case decision.Skipped:
			parts = append(parts, who+" failed, skipped: "+clean(d.Error))
		default:
			parts = append(parts, who+" "+clean(d.Action))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

// clean makes text from the log safe for a terminal: control characters
// (escape sequences among them) become "?", and it stays on one line.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
}

// fit cleans s and cuts it to n characters.
func fit(s string, n int) string {
	s = clean(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

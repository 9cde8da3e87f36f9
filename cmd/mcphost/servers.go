package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/mcphost-project/mcphost/host"
	"github.com/mcphost-project/mcphost/host/admin"
	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/engine"
)

// defaultAdminURL is where `mcphost servers` looks for the admin API when
// neither --admin nor $MCPHOST_ADMIN says: admin.http of docs/admin-api.md.
const defaultAdminURL = "http://127.0.0.1:7701"

const serversUsage = `usage: mcphost servers list|add|update|rm|test|reconnect|disconnect [NAME] [flags]

Manages the servers of a running mcphost through its admin API (an admin
block in its config; see docs/admin-api.md).

  list                        the servers, their state and tools
      mcphost servers list
  add NAME -- COMMAND [ARGS]  add a stdio server
  add NAME --url URL          add a remote server (--transport sse|streamable-http,
                              default streamable-http)
  add NAME --file FILE        add a whole JSON definition ("-" reads stdin)
      mcphost servers add files -- npx -y @modelcontextprotocol/server-filesystem /srv
  update NAME [flags]         change only the fields given (a JSON merge patch);
                              with --file, replace the whole definition
      mcphost servers update files --if-version 3 -- npx -y @modelcontextprotocol/server-filesystem /data
  rm NAME                     remove a server
      mcphost servers rm files --if-version 4
  test [NAME] (-- COMMAND [ARGS] | --url URL | --file FILE)
                              connect to a definition without adding it: list its
                              tools, prompts and resources, or say what failed
      mcphost servers test --url https://mcp.example.com/mcp --header "Authorization: Bearer $T"
  reconnect NAME              end the server's sessions and connect it again
      mcphost servers reconnect files
  disconnect NAME             end its sessions and keep it off until reconnect
                              (not remembered across restarts)
      mcphost servers disconnect files

Flags of every command:
  --admin URL   the admin API (default $MCPHOST_ADMIN, else ` + defaultAdminURL + `)
  --key KEY     a listen.auth key in an admin group (default $MCPHOST_ADMIN_KEY,
                else $MCPHOST_TOKEN)
  --json        print the API's JSON instead of text

Definition flags (add, update, test):
  --url URL  --transport T  --env K=V ...  --header "K: V" ...  --cwd DIR
  --timeout D  --connect-timeout D  --idle-timeout D  --sessions S  --max-sessions N
  --file FILE   a whole definition in JSON, instead of the flags above
Update sends only the flags given; a flag given an empty value removes the
field (--cwd "", --env K=, --header "K:"). -- COMMAND ARGS replaces the
command and all its arguments. --if-version N (update, rm) changes nothing
if the server changed since version N.

Where test runs: by default it starts or reaches the server here, in this
process, and needs no running mcphost. Given --admin, $MCPHOST_ADMIN or
--remote, the mcphost there connects to it instead, from where it would run
it once added. --local forces the former.`

// runServers is `mcphost servers`: a client of the admin API.
func runServers(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, serversUsage)
		return exitError(2)
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stdout, serversUsage)
		return nil
	}
	sub := args[0]
	if !slices.Contains([]string{"list", "add", "update", "rm", "test", "reconnect", "disconnect"}, sub) {
		fmt.Fprintf(stderr, "mcphost servers: unknown command %q\n\n%s\n", sub, serversUsage)
		return exitError(2)
	}
	// What follows "--" is the server's command line, never flags.
	rest, command, hasCommand := args[1:], []string(nil), false
	if i := slices.Index(rest, "--"); i >= 0 {
		rest, command, hasCommand = rest[:i], rest[i+1:], true
	}

	fs := newFlagSet("servers "+sub, stderr)
	var o serversOptions
	fs.StringVar(&o.admin, "admin", "", "admin API URL (default $MCPHOST_ADMIN, else "+defaultAdminURL+")")
	fs.StringVar(&o.key, "key", "", "admin credential (default $MCPHOST_ADMIN_KEY, else $MCPHOST_TOKEN)")
	fs.BoolVar(&o.asJSON, "json", false, "print the API's JSON")
	var d defFlags
	var ifVersion int64
	var local, remote bool
	switch sub {
	case "add", "update", "test":
		d.register(fs)
	}
	switch sub {
	case "update", "rm":
		fs.Int64Var(&ifVersion, "if-version", 0, "change nothing if the server is no longer at this version (If-Match)")
	case "test":
		fs.BoolVar(&local, "local", false, "test here, without a running mcphost (the default without --admin or $MCPHOST_ADMIN)")
		fs.BoolVar(&remote, "remote", false, "test through the admin API of a running mcphost")
	}
	pos, err := parseInterleaved(fs, rest)
	if err != nil {
		return exitError(2)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	usage := func(msg string) error {
		fmt.Fprintf(stderr, "mcphost servers %s: %s\nRun \"mcphost servers\" for usage.\n", sub, msg)
		return exitError(2)
	}
	if given["if-version"] && ifVersion < 1 {
		return usage("--if-version takes a version as the API gives it: 1 or more")
	}
	if local && remote {
		return usage("--local or --remote, not both")
	}
	if hasCommand && sub != "add" && sub != "update" && sub != "test" {
		return usage("only add, update and test take -- COMMAND [ARGS...]")
	}
	if hasCommand && len(command) == 0 {
		return usage("no command after --")
	}
	o.resolve(given["admin"])
	c := &adminClient{base: o.base, key: o.key, asJSON: o.asJSON, stdout: stdout, stderr: stderr, hc: &http.Client{}}

	switch sub {
	case "list":
		if len(pos) != 0 {
			return usage("list takes no arguments")
		}
		return c.list(ctx)
	case "rm", "reconnect", "disconnect":
		if len(pos) != 1 {
			return usage(sub + " takes one server name")
		}
		if sub == "rm" {
			return c.remove(ctx, pos[0], ifVersion)
		}
		return c.action(ctx, pos[0], sub)
	}

	// add, update and test take a definition.
	if len(pos) > 1 {
		return usage(fmt.Sprintf("too many arguments %q: put the server's command line after --, like mcphost servers %s NAME -- COMMAND [ARGS...]", pos[1:], sub))
	}
	name := ""
	if len(pos) == 1 {
		name = pos[0]
	}
	d.command, d.hasCommand = command, hasCommand
	if d.file != "" {
		if n := d.definitionFlags(given); n != "" {
			return usage("--file holds the whole definition; leave out --" + n)
		}
		if hasCommand {
			return usage("--file holds the whole definition; leave out -- COMMAND")
		}
	}
	switch sub {
	case "add":
		spec, err := d.spec(name, stdin, stderr)
		if err != nil {
			return err
		}
		if spec.Name == "" {
			return usage("name the server: mcphost servers add NAME ...")
		}
		return c.add(ctx, spec)
	case "update":
		if name == "" {
			return usage("name the server to update")
		}
		if d.file != "" {
			spec, err := d.spec(name, stdin, stderr)
			if err != nil {
				return err
			}
			return c.replace(ctx, name, spec, ifVersion)
		}
		patch, err := d.patch(given)
		if err != nil {
			return usage(err.Error())
		}
		if len(patch) == 0 {
			return usage("nothing to change: give the fields to change as flags, -- COMMAND [ARGS...], or --file")
		}
		return c.patch(ctx, name, patch, ifVersion)
	default: // test
		spec, err := d.spec(name, stdin, stderr)
		if err != nil {
			return err
		}
		if remote || (!local && o.adminGiven) {
			return c.test(ctx, spec)
		}
		return testLocal(ctx, spec, o.asJSON, stdout, stderr)
	}
}

// serversOptions are the flags every servers command takes.
type serversOptions struct {
	admin, key string
	asJSON     bool
	// resolved
	base       string
	adminGiven bool // by --admin or $MCPHOST_ADMIN
}

func (o *serversOptions) resolve(adminFlag bool) {
	o.adminGiven = adminFlag
	if !adminFlag {
		if env := os.Getenv("MCPHOST_ADMIN"); env != "" {
			o.admin, o.adminGiven = env, true
		} else {
			o.admin = defaultAdminURL
		}
	}
	o.base = strings.TrimRight(o.admin, "/")
	if !strings.Contains(o.base, "://") {
		o.base = "http://" + o.base
	}
	if o.key == "" {
		o.key = os.Getenv("MCPHOST_ADMIN_KEY")
	}
	if o.key == "" {
		o.key = envToken()
	}
}

// listFlag is a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ", ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// defFlags are the flags that make a server definition.
type defFlags struct {
	url, transport, cwd                  string
	timeout, connectTimeout, idleTimeout string
	sessions                             string
	maxSessions                          int
	env, headers                         listFlag
	file                                 string
	command                              []string
	hasCommand                           bool
}

func (d *defFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.url, "url", "", "the URL of a remote server")
	fs.StringVar(&d.transport, "transport", "", "stdio, sse or streamable-http (default: stdio with a command, streamable-http with --url)")
	fs.Var(&d.env, "env", "an environment variable K=V of a stdio server (repeatable)")
	fs.Var(&d.headers, "header", `an HTTP header "K: V" of a remote server (repeatable)`)
	fs.StringVar(&d.cwd, "cwd", "", "working directory of a stdio server")
	fs.StringVar(&d.timeout, "timeout", "", "bound of each call, like 60s")
	fs.StringVar(&d.connectTimeout, "connect-timeout", "", "bound of connecting, like 30s")
	fs.StringVar(&d.idleTimeout, "idle-timeout", "", `disconnect after this long without calls ("0": never)`)
	fs.StringVar(&d.sessions, "sessions", "", "shared, per_client or per_session")
	fs.IntVar(&d.maxSessions, "max-sessions", 0, "most upstream sessions at once (per_client)")
	fs.StringVar(&d.file, "file", "", `a whole definition in JSON ("-": stdin)`)
}

// definitionFlags names a definition flag that was given, other than
// --file; "" if none.
func (d *defFlags) definitionFlags(given map[string]bool) string {
	for _, n := range []string{"url", "transport", "env", "header", "cwd", "timeout", "connect-timeout", "idle-timeout", "sessions", "max-sessions"} {
		if given[n] {
			return n
		}
	}
	return ""
}

// spec builds a whole definition: from --file, or from the flags.
func (d *defFlags) spec(name string, stdin io.Reader, stderr io.Writer) (config.ServerSpec, error) {
	if d.file != "" {
		return readSpecFile(d.file, name, stdin, stderr)
	}
	usage := func(msg string) (config.ServerSpec, error) {
		fmt.Fprintln(stderr, "mcphost servers:", msg)
		return config.ServerSpec{}, exitError(2)
	}
	if d.hasCommand && d.url != "" {
		return usage("a server has a command (stdio) or a URL (remote), not both")
	}
	if !d.hasCommand && d.url == "" {
		return usage("give the server's command line after -- (stdio), --url URL (remote), or --file FILE")
	}
	env, err := pairs(d.env, "=", "--env K=V", false)
	if err != nil {
		return usage(err.Error())
	}
	headers, err := pairs(d.headers, ":", `--header "K: V"`, false)
	if err != nil {
		return usage(err.Error())
	}
	s := config.ServerSpec{Name: name, Transport: d.transport, Cwd: d.cwd, URL: d.url, Env: stringMap(env), Headers: stringMap(headers),
		Timeout: d.timeout, IdleTimeout: d.idleTimeout, ConnectTimeout: d.connectTimeout, Sessions: d.sessions, MaxSessions: d.maxSessions}
	if d.hasCommand {
		s.Command, s.Args = d.command[0], d.command[1:]
	}
	if s.Transport == "" {
		s.Transport = host.TransportStreamableHTTP
		if d.hasCommand {
			s.Transport = host.TransportStdio
		}
	}
	return s, nil
}

// patch builds a JSON merge patch (RFC 7396) of the flags given: an empty
// value removes the field (JSON null), and so does K= or "K:" for one key
// of env or headers.
func (d *defFlags) patch(given map[string]bool) (map[string]any, error) {
	p := map[string]any{}
	orNull := func(v string) any {
		if v == "" {
			return nil
		}
		return v
	}
	for _, f := range []struct {
		flag, field string
		v           *string
	}{
		{"url", "url", &d.url}, {"transport", "transport", &d.transport}, {"cwd", "cwd", &d.cwd},
		{"timeout", "timeout", &d.timeout}, {"connect-timeout", "connect_timeout", &d.connectTimeout},
		{"idle-timeout", "idle_timeout", &d.idleTimeout}, {"sessions", "sessions", &d.sessions},
	} {
		if given[f.flag] {
			p[f.field] = orNull(*f.v)
		}
	}
	if given["max-sessions"] {
		if d.maxSessions == 0 {
			p["max_sessions"] = nil
		} else {
			p["max_sessions"] = d.maxSessions
		}
	}
	if d.hasCommand {
		p["command"] = d.command[0]
		if len(d.command) > 1 {
			p["args"] = d.command[1:]
		} else {
			p["args"] = nil
		}
	}
	if len(d.env) > 0 {
		env, err := pairs(d.env, "=", "--env K=V", true)
		if err != nil {
			return nil, err
		}
		p["env"] = env
	}
	if len(d.headers) > 0 {
		h, err := pairs(d.headers, ":", `--header "K: V"`, true)
		if err != nil {
			return nil, err
		}
		p["headers"] = h
	}
	return p, nil
}

// pairs splits K<sep>V values; with emptyIsNull, an empty V is nil (a
// merge patch's removal).
func pairs(vals []string, sep, form string, emptyIsNull bool) (map[string]any, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	m := map[string]any{}
	for _, kv := range vals {
		k, v, ok := strings.Cut(kv, sep)
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not of the form %s", kv, form)
		}
		if v == "" && emptyIsNull {
			m[k] = nil
		} else {
			m[k] = v
		}
	}
	return m, nil
}

func stringMap(m map[string]any) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k], _ = v.(string)
	}
	return out
}

// readSpecFile reads a whole definition, strictly as the API would; a
// definition without a name gets name, and one with another name is an
// error.
func readSpecFile(path, name string, stdin io.Reader, stderr io.Writer) (config.ServerSpec, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(io.LimitReader(stdin, 1<<20))
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		fmt.Fprintln(stderr, "mcphost servers:", err)
		return config.ServerSpec{}, exitError(1)
	}
	spec, err := config.DecodeServerSpec(data)
	if err != nil {
		return config.ServerSpec{}, reportSpecError(stderr, "Malformed server definition in "+path, err)
	}
	if spec.Name == "" {
		spec.Name = name
	}
	if name != "" && spec.Name != name {
		fmt.Fprintf(stderr, "mcphost servers: %s defines the server %q, not %q\n", path, spec.Name, name)
		return config.ServerSpec{}, exitError(1)
	}
	return spec, nil
}

// reportSpecError prints a definition's mistakes as a problem document of
// the API would be printed, and is exit status 1.
func reportSpecError(stderr io.Writer, title string, err error) error {
	var se *config.SpecError
	if errors.As(err, &se) {
		printProblem(stderr, admin.Problem{Title: title, Detail: se.Error(), Errors: se.Errors})
	} else {
		printProblem(stderr, admin.Problem{Title: title, Detail: err.Error()})
	}
	return exitError(1)
}

// printProblem prints "mcphost servers: TITLE: DETAIL" and each field at
// fault. A detail that only repeats the fields (as the API's 400 and 422
// do) is left out.
func printProblem(w io.Writer, p admin.Problem) {
	line := "mcphost servers: " + p.Title
	if p.Title == "" {
		line = "mcphost servers: " + http.StatusText(p.Status)
	}
	var fields []string
	for _, fe := range p.Errors {
		if fe.Field != "" {
			fields = append(fields, fe.Field+": "+fe.Detail)
		} else {
			fields = append(fields, fe.Detail)
		}
	}
	if p.Detail != "" && p.Detail != strings.Join(fields, "; ") {
		line += ": " + p.Detail
	}
	fmt.Fprintln(w, line)
	for _, f := range fields {
		fmt.Fprintln(w, "  "+f)
	}
}

// adminClient calls the admin API and prints its answers.
type adminClient struct {
	base, key      string
	asJSON         bool
	hc             *http.Client
	stdout, stderr io.Writer
}

// Bounds of a call: reads and quick changes, and those that wait for a
// server to connect (up to its connect_timeout, 60 s at most for a test).
const (
	adminQuick = 30 * time.Second
	adminSlow  = 5 * time.Minute
)

// call sends one request and returns the answer's body when its status is
// 2xx. Any other answer, or none, is printed and is exit status 1.
func (c *adminClient) call(ctx context.Context, timeout time.Duration, method, path string, body any, header http.Header) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost servers: admin URL %q: %v\n", c.base, err)
		return nil, exitError(2)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			fmt.Fprintf(c.stderr, "mcphost servers: no admin API at %s (is mcphost running with an admin block?)\n", c.base)
		case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
			fmt.Fprintf(c.stderr, "mcphost servers: %s %s: no answer within %s\n", method, req.URL.Redacted(), timeout)
		default:
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			fmt.Fprintf(c.stderr, "mcphost servers: %s %s: %v\n", method, req.URL.Redacted(), err)
		}
		return nil, exitError(1)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost servers: %s %s: reading the answer: %v\n", method, req.URL.Redacted(), err)
		return nil, exitError(1)
	}
	if resp.StatusCode/100 == 2 {
		return data, nil
	}
	return nil, c.refused(req, resp, data)
}

// refused prints an answer other than 2xx: a problem document, or what
// came back in its place.
func (c *adminClient) refused(req *http.Request, resp *http.Response, data []byte) error {
	var p admin.Problem
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if (mt == "application/problem+json" || mt == "application/json") && json.Unmarshal(data, &p) == nil && (p.Title != "" || p.Detail != "") {
		if p.Status == 0 {
			p.Status = resp.StatusCode
		}
		printProblem(c.stderr, p)
		if c.asJSON {
			c.stdout.Write(data)
		}
	} else {
		fmt.Fprintf(c.stderr, "mcphost servers: %s %s: %s", req.Method, req.URL.Redacted(), resp.Status)
		if s := strings.TrimSpace(string(data)); s != "" {
			fmt.Fprintf(c.stderr, ": %s", oneLine(s))
		}
		fmt.Fprintln(c.stderr)
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		if c.key == "" {
			fmt.Fprintln(c.stderr, "The admin API needs a key: pass --key KEY or set MCPHOST_ADMIN_KEY (a key of listen.auth in an admin group).")
		} else {
			fmt.Fprintln(c.stderr, "The key was refused: pass another with --key KEY or MCPHOST_ADMIN_KEY (a key of listen.auth in an admin group).")
		}
	case http.StatusForbidden:
		fmt.Fprintln(c.stderr, "This key is not an admin's: pass one in listen.auth.admin_groups with --key KEY or MCPHOST_ADMIN_KEY.")
	case http.StatusPreconditionFailed:
		fmt.Fprintln(c.stderr, "Nothing changed. Run mcphost servers list --json for the current version.")
	}
	return exitError(1)
}

// printJSON writes the API's JSON as it came.
func (c *adminClient) printJSON(data []byte) error {
	_, err := c.stdout.Write(data)
	if err == nil && !bytes.HasSuffix(data, []byte("\n")) {
		_, err = io.WriteString(c.stdout, "\n")
	}
	return err
}

func decodeInfo(data []byte, stderr io.Writer) (engine.ServerInfo, error) {
	var info engine.ServerInfo
	if err := json.Unmarshal(data, &info); err != nil {
		fmt.Fprintf(stderr, "mcphost servers: the admin API answered what is not a server: %v\n", err)
		return info, exitError(1)
	}
	return info, nil
}

func (c *adminClient) list(ctx context.Context) error {
	data, err := c.call(ctx, adminQuick, "GET", "/v1/servers", nil, nil)
	if err != nil {
		return err
	}
	if c.asJSON {
		return c.printJSON(data)
	}
	var doc struct {
		Servers []engine.ServerInfo `json:"servers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		fmt.Fprintf(c.stderr, "mcphost servers: the admin API answered what is not a list of servers: %v\n", err)
		return exitError(1)
	}
	if len(doc.Servers) == 0 {
		fmt.Fprintln(c.stdout, "no servers")
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tSTATE\tTOOLS\tTRANSPORT\tCOMMAND OR URL")
	var notes []string
	for _, s := range doc.Servers {
		state, tools := "-", "-"
		switch {
		case s.Problem != "":
			state = "not served"
			notes = append(notes, s.Name+": "+oneLine(s.Problem))
		case s.Status != nil:
			state, tools = string(s.Status.State), strconv.Itoa(s.Status.Tools)
			if s.Status.State != host.StateConnected && s.Status.Error != "" {
				notes = append(notes, s.Name+": "+oneLine(s.Status.Error))
			}
		}
		transport := s.Transport
		if transport == "" && s.Status != nil {
			transport = s.Status.Transport // the config file may leave it to the default
		}
		if transport == "" {
			transport = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Source, state, tools, transport, target(s.ServerSpec))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(notes) > 0 {
		fmt.Fprintln(c.stdout)
		for _, n := range notes {
			fmt.Fprintln(c.stdout, n)
		}
	}
	return nil
}

// target is a server's command line, or its URL.
func target(s config.ServerSpec) string {
	if s.Command == "" {
		return oneLine(s.URL)
	}
	words := []string{quoteWord(s.Command)}
	for _, a := range s.Args {
		words = append(words, quoteWord(a))
	}
	return oneLine(strings.Join(words, " "))
}

func quoteWord(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n\"'\\$`") {
		return strconv.Quote(s)
	}
	return s
}

// stateText says how a server is: "connected, 11 tools", "failed: ...".
func stateText(info engine.ServerInfo) string {
	switch {
	case info.Problem != "":
		return "not served: " + oneLine(info.Problem)
	case info.Status == nil:
		return "no state yet"
	case info.Status.State == host.StateConnected:
		return "connected, " + plural(info.Status.Tools, "tool")
	case info.Status.Error != "":
		return string(info.Status.State) + ": " + oneLine(info.Status.Error)
	}
	return string(info.Status.State)
}

func (c *adminClient) add(ctx context.Context, spec config.ServerSpec) error {
	data, err := c.call(ctx, adminSlow, "POST", "/v1/servers", spec, nil)
	if err != nil {
		return err
	}
	if c.asJSON {
		return c.printJSON(data)
	}
	info, err := decodeInfo(data, c.stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "added %s: %s\n", info.Name, stateText(info))
	return nil
}

func ifMatchHeader(version int64, h http.Header) http.Header {
	if h == nil {
		h = http.Header{}
	}
	if version > 0 {
		h.Set("If-Match", fmt.Sprintf(`"v%d"`, version))
	}
	return h
}

func (c *adminClient) replace(ctx context.Context, name string, spec config.ServerSpec, version int64) error {
	return c.changed(c.call(ctx, adminSlow, "PUT", "/v1/servers/"+url.PathEscape(name), spec, ifMatchHeader(version, nil)))
}

func (c *adminClient) patch(ctx context.Context, name string, patch map[string]any, version int64) error {
	h := ifMatchHeader(version, http.Header{"Content-Type": {"application/merge-patch+json"}})
	return c.changed(c.call(ctx, adminSlow, "PATCH", "/v1/servers/"+url.PathEscape(name), patch, h))
}

// changed prints the answer of an update.
func (c *adminClient) changed(data []byte, err error) error {
	if err != nil {
		return err
	}
	if c.asJSON {
		return c.printJSON(data)
	}
	info, err := decodeInfo(data, c.stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "updated %s (version %d): %s\n", info.Name, info.Version, stateText(info))
	return nil
}

func (c *adminClient) remove(ctx context.Context, name string, version int64) error {
	if _, err := c.call(ctx, adminQuick, "DELETE", "/v1/servers/"+url.PathEscape(name), nil, ifMatchHeader(version, nil)); err != nil {
		return err
	}
	if !c.asJSON {
		fmt.Fprintf(c.stdout, "removed %s\n", name)
	}
	return nil
}

// action is reconnect or disconnect.
func (c *adminClient) action(ctx context.Context, name, verb string) error {
	timeout := adminQuick
	if verb == "reconnect" {
		timeout = adminSlow
	}
	data, err := c.call(ctx, timeout, "POST", "/v1/servers/"+url.PathEscape(name)+"/"+verb, nil, nil)
	if err != nil {
		return err
	}
	if c.asJSON {
		return c.printJSON(data)
	}
	info, err := decodeInfo(data, c.stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s: %s\n", info.Name, stateText(info))
	return nil
}

// test asks the running mcphost to connect to a definition.
func (c *adminClient) test(ctx context.Context, spec config.ServerSpec) error {
	data, err := c.call(ctx, adminSlow, "POST", "/v1/servers:test", spec, nil)
	if err != nil {
		return err
	}
	var res host.ProbeResult
	if err := json.Unmarshal(data, &res); err != nil {
		fmt.Fprintf(c.stderr, "mcphost servers: the admin API answered what is not a test result: %v\n", err)
		return exitError(1)
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
	res := host.Probe(ctx, sc, nil)
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
func printProbe(res *host.ProbeResult, stdout, stderr io.Writer) error {
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

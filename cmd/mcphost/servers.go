package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/engine"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// defaultAdminURL is where `mcphost servers` looks for the admin API when
// neither --admin nor $MCPHOST_ADMIN says: admin.http of docs/admin-api.md.
const defaultAdminURL = "http://127.0.0.1:7701"

// adminFlagsUsage ends the usage of the admin API's clients (servers,
// users, toolsets): the flags that all their commands take (flags).
const adminFlagsUsage = `Flags of every command:
  --admin URL   the admin API (default $MCPHOST_ADMIN, else ` + defaultAdminURL + `)
  --key KEY     a listen.auth key in an admin group (default $MCPHOST_ADMIN_KEY,
                else $MCPHOST_TOKEN)
  --json        print the API's JSON instead of text`

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

` + adminFlagsUsage + `

Definition flags (add, update, test):
  --url URL  --transport T  --env K=V ...  --header "K: V" ...  --cwd DIR
  --timeout D  --connect-timeout D  --idle-timeout D  --sessions S  --max-sessions N
  --secret-arg N ...  the Nth arg (from 0, after the command) is a secret
  --secret-url        the whole URL is a secret, its path included
  --file FILE   a whole definition in JSON, instead of the flags above
Update sends only the flags given; a flag given an empty value removes the
field (--cwd "", --env K=, --header "K:"). -- COMMAND ARGS replaces the
command and all its arguments. --if-version N (update, rm) changes nothing
if the server changed since version N. add and update exit 1 when the server
is stored but cannot connect (it stays stored, and its status says why);
--allow-failed keeps exit status 0 for a server that will be reachable later.

Where test runs: by default it starts or reaches the server here, in this
process, and needs no running mcphost. Given --admin, $MCPHOST_ADMIN or
--remote, the mcphost there connects to it instead, from where it would run
it once added. --local forces the former.`

// serversArgs are the arguments of each servers command, for its usage.
var serversArgs = map[string]string{
	"list":       " [--admin URL] [--key KEY] [--json]",
	"add":        " NAME (-- COMMAND [ARGS] | --url URL | --file FILE) [flags]",
	"update":     " NAME [flags] [-- COMMAND [ARGS]]",
	"rm":         " NAME [--if-version N]",
	"test":       " [NAME] (-- COMMAND [ARGS] | --url URL | --file FILE) [--local | --remote]",
	"reconnect":  " NAME",
	"disconnect": " NAME",
}

// runServers is `mcphost servers`: a client of the admin API.
func runServers(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, serversUsage)
		return exitError(2)
	}
	if isHelp(args[0]) {
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

	fs := newFlagSet("servers "+sub, fmt.Sprintf("usage: mcphost servers %s%s\n\nRun \"mcphost servers help\" for more.", sub, serversArgs[sub]), stdout, stderr)
	var o serversOptions
	o.flags(fs)
	var d defFlags
	var ifVersion int64
	var local, remote, allowFailed bool
	switch sub {
	case "add", "update", "test":
		d.register(fs.FlagSet)
	}
	if sub == "add" || sub == "update" {
		fs.BoolVar(&allowFailed, "allow-failed", false, "exit 0 even when the server is stored but cannot connect")
	}
	switch sub {
	case "update", "rm":
		fs.Int64Var(&ifVersion, "if-version", 0, "change nothing if the server is no longer at this version (If-Match)")
	case "test":
		fs.BoolVar(&local, "local", false, "test here, without a running mcphost (the default without --admin or $MCPHOST_ADMIN)")
		fs.BoolVar(&remote, "remote", false, "test through the admin API of a running mcphost")
	}
	pos, err := fs.parse(rest)
	if err != nil {
		return err
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
	c := &adminClient{base: o.base, key: o.key, asJSON: o.asJSON, stdout: stdout, stderr: stderr, hc: &http.Client{}, allowFailed: allowFailed}

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

// flags declares the flags of every command of the admin API's clients
// (adminFlagsUsage).
func (o *serversOptions) flags(fs *cmdFlags) {
	fs.StringVar(&o.admin, "admin", "", "admin API URL (default $MCPHOST_ADMIN, else "+defaultAdminURL+")")
	fs.StringVar(&o.key, "key", "", "admin credential (default $MCPHOST_ADMIN_KEY, else $MCPHOST_TOKEN)")
	fs.BoolVar(&o.asJSON, "json", false, "print the API's JSON")
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
	if err := c.decodeAnswer(data, &doc, "a list of servers"); err != nil {
		return err
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
			if s.Status.State != upstream.StateConnected && s.Status.Error != "" {
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
	case info.Status.State == upstream.StateConnected:
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
	return c.printServer(data, func(info engine.ServerInfo) string {
		return fmt.Sprintf("added %s: %s", info.Name, stateText(info))
	})
}

func (c *adminClient) replace(ctx context.Context, name string, spec config.ServerSpec, version int64) error {
	return c.changed(c.call(ctx, adminSlow, "PUT", serverPath(name), spec, ifMatchHeader(version, nil)))
}

func (c *adminClient) patch(ctx context.Context, name string, patch map[string]any, version int64) error {
	h := ifMatchHeader(version, http.Header{"Content-Type": {"application/merge-patch+json"}})
	return c.changed(c.call(ctx, adminSlow, "PATCH", serverPath(name), patch, h))
}

// changed prints the answer of an update.
func (c *adminClient) changed(data []byte, err error) error {
	if err != nil {
		return err
	}
	return c.printServer(data, func(info engine.ServerInfo) string {
		return fmt.Sprintf("updated %s (version %d): %s", info.Name, info.Version, stateText(info))
	})
}

func (c *adminClient) remove(ctx context.Context, name string, version int64) error {
	if _, err := c.call(ctx, adminQuick, "DELETE", serverPath(name), nil, ifMatchHeader(version, nil)); err != nil {
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
	data, err := c.call(ctx, timeout, "POST", serverPath(name)+"/"+verb, nil, nil)
	if err != nil {
		return err
	}
	return c.printServer(data, func(info engine.ServerInfo) string {
		return info.Name + ": " + stateText(info)
	})
}

// printServer prints an answer that is one server: the API's JSON with
// --json, else the line that line makes of it.
func (c *adminClient) printServer(data []byte, line func(engine.ServerInfo) string) error {
	var info engine.ServerInfo
	if err := c.decodeAnswer(data, &info, "a server"); err != nil {
		return err
	}
	if c.asJSON {
		if err := c.printJSON(data); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(c.stdout, line(info))
	}
	// Stored, but not serving: a failure, unless asked to keep it anyway
	// (a server that is down now and will be up later).
	if info.Status != nil && info.Status.State == upstream.StateFailed && !c.allowFailed {
		fmt.Fprintf(c.stderr, "%s: %s is stored but could not connect; fix it (mcphost servers update %s ...) or remove it, or pass --allow-failed to keep a server that will be reachable later\n", c.prefix(), info.Name, info.Name)
		return exitError(1)
	}
	return nil
}

package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/internal/secrets"
	"github.com/mcphost-project/mcphost/internal/version"
)

// exitError ends the process with a code, after the command already said why.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

const usage = `mcphost serves the tools of many MCP servers as one, under Wasm policies.

Usage:
  mcphost run CONFIG [--http ADDR] [--stdio] [--no-watch] [--log-level LEVEL] [--log-format json]
  mcphost validate CONFIG [--allow-missing-commands]
  mcphost tools CONFIG [SERVER...] [--toolset NAME] [--json | --format mcp|openai|anthropic|gemini | --stats] [--allow-failed]
  mcphost call CONFIG NAME [JSON-ARGUMENTS] [--json]
  mcphost status URL [--token TOKEN] [--json]
  mcphost bench TARGET --tool NAME [--args JSON] [--calls N] [--concurrency C] [--rate N] [--duration D] [--json]
  mcphost plugin inspect FILE [--json] [--config KEY=VALUE ...]
  mcphost plugin test FILE --hook HOOK --input FILE [--config KEY=VALUE ...]
  mcphost plugin check FILE [CASE.txtar | DIR ...] [--config KEY=VALUE ...]
  mcphost pins list|approve CONFIG [SERVER/TOOL ... | --all] [--plugin NAME]
  mcphost auth login|logout SERVER CONFIG, mcphost auth status CONFIG
  mcphost audit tail [CONFIG] [--follow] [--file F | --admin URL]
  mcphost audit query [--server S --tool T --subject S --outcome O --since T --limit N] [--json]
  mcphost import [FILE...] [--admin URL]   (Claude Desktop, Claude Code, Cursor, VS Code, server.json)
  mcphost toolsets list|get|set|delete [NAME] [--admin URL]
  mcphost version

The servers of a running mcphost, through its admin API (flags --admin URL,
--key KEY, --json; "mcphost help servers" tells more):
  mcphost servers list
  mcphost servers add files -- npx -y @modelcontextprotocol/server-filesystem /srv
  mcphost servers add docs --url https://mcp.example.com/mcp --header "Authorization: Bearer $T"
  mcphost servers update files --if-version 3 -- npx -y @modelcontextprotocol/server-filesystem /data
  mcphost servers rm files
  mcphost servers test -- npx -y @modelcontextprotocol/server-filesystem /srv
  mcphost servers reconnect files
  mcphost servers disconnect files

The users of a running mcphost, API keys kept in its store ("mcphost help
users" tells more):
  mcphost users list
  mcphost users add alice --group eng --attr team=core
  mcphost users key rotate alice KEY-ID
  mcphost users disable alice
  mcphost users secret set alice GITHUB_TOKEN < token.txt

The toolsets of a running mcphost, each served at /mcp/NAME ("mcphost help
toolsets" tells more):
  mcphost toolsets list
  mcphost toolsets set ide --server fs --tool 'read_*'
  mcphost toolsets delete ide

A plugin FILE may be builtin:NAME, a policy built into mcphost. Flags may
come before or after CONFIG. Run "mcphost COMMAND -h" (or "mcphost help
COMMAND") for a command's usage and flags.
`

// run is the whole CLI; main only wires it to the process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	err := runCommand(ctx, args, stdin, stdout, stderr)
	if errors.Is(err, errHelp) {
		return nil
	}
	return err
}

func runCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitError(2)
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "run":
		return runServe(ctx, rest, stdin, stdout, stderr)
	case "validate":
		return runValidate(ctx, rest, stdout, stderr)
	case "tools":
		return runTools(ctx, rest, stdout, stderr)
	case "call":
		return runCall(ctx, rest, stdout, stderr)
	case "status":
		return runStatus(ctx, rest, stdout, stderr)
	case "plugin":
		return runPlugin(ctx, rest, stdout, stderr)
	case "pins":
		return runPins(ctx, rest, stdout, stderr)
	case "bench":
		return runBench(ctx, rest, stdout, stderr)
	case "servers":
		return runServers(ctx, rest, stdin, stdout, stderr)
	case "users":
		return runUsers(ctx, rest, stdin, stdout, stderr)
	case "toolsets":
		return runToolsets(ctx, rest, stdout, stderr)
	case "audit":
		return runAudit(ctx, rest, stdout, stderr)
	case "auth":
		return runAuth(ctx, rest, stdout, stderr)
	case "import":
		return runImport(ctx, rest, stdin, stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintf(stdout, "mcphost %s (commit %s, plugin ABI %s, %s %s/%s)\n", version.Version, cmp.Or(commit, "unknown"), abi.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return nil
	case "help", "-h", "-help", "--help":
		// "mcphost help COMMAND [SUBCOMMAND]" is "mcphost COMMAND [SUBCOMMAND] -h".
		if len(rest) > 0 && !isHelp(rest[0]) {
			return runCommand(ctx, append(slices.Clone(rest[:min(len(rest), 2)]), "-h"), stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprintf(stderr, "mcphost: unknown command %q\n\n%s", cmd, usage)
	return exitError(2)
}

// errHelp is what a command returns once -h or --help printed its usage;
// run makes it exit status 0.
var errHelp = errors.New("help requested")

// cmdFlags are a command's flags and its usage, which -h or --help prints
// to stdout (exit status 0) and a bad flag or misuse to stderr (exit
// status 2), each followed by the list of flags.
type cmdFlags struct {
	*flag.FlagSet
	usage          string
	stdout, stderr io.Writer
}

// newFlagSet makes the flags of command name ("plugin test"); usage is
// its text, starting "usage:".
func newFlagSet(name, usage string, stdout, stderr io.Writer) *cmdFlags {
	c := &cmdFlags{FlagSet: flag.NewFlagSet("mcphost "+name, flag.ContinueOnError), usage: usage, stdout: stdout, stderr: stderr}
	c.SetOutput(stderr)         // a bad flag's error; the usage follows, from parse
	c.FlagSet.Usage = func() {} // parse prints it, where it belongs
	return c
}

// writeUsage prints the usage and the flags to w.
func (c *cmdFlags) writeUsage(w io.Writer) {
	fmt.Fprintln(w, strings.TrimRight(c.usage, "\n"))
	hasFlags := false
	c.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprintln(w, "\nFlags:")
		c.SetOutput(w)
		c.PrintDefaults()
		c.SetOutput(c.stderr)
	}
}

// misuse prints the usage to stderr, for arguments that do not fit it:
// exit status 2.
func (c *cmdFlags) misuse() error {
	c.writeUsage(c.stderr)
	return exitError(2)
}

// parse parses flags that may come before, between or after the
// positional arguments, which it returns in order. After -h or --help it
// prints the usage to stdout and returns errHelp; after a bad flag, the
// error and the usage to stderr, and exit status 2.
func (c *cmdFlags) parse(args []string) ([]string, error) {
	var pos []string
	for {
		if err := c.Parse(args); errors.Is(err, flag.ErrHelp) {
			c.writeUsage(c.stdout)
			return nil, errHelp
		} else if err != nil {
			fmt.Fprintln(c.stderr)
			return nil, c.misuse()
		}
		args = c.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// isHelp reports whether arg asks for a command's usage.
func isHelp(arg string) bool {
	return arg == "help" || arg == "-h" || arg == "-help" || arg == "--help"
}

// loadConfig loads and prints the diagnostics of a config file; any error
// diagnostic ends the command with exit status 1.
func loadConfig(path string, stderr io.Writer) (*config.File, error) {
	file, diags := config.Load(path)
	if err := reportDiags(diags, stderr); err != nil {
		return nil, err
	}
	return file, nil
}

// reportDiags prints diags; any error among them is exit status 1.
func reportDiags(diags *config.Diagnostics, stderr io.Writer) error {
	if len(diags.List) > 0 {
		_ = diags.WriteText(stderr, 100, isTerminal(stderr))
	}
	if diags.HasErrors() {
		return exitError(1)
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// logFlags are the logging flags every long-running command takes.
type logFlags struct {
	level  string
	format string
}

func (l *logFlags) register(fs *flag.FlagSet, def string) {
	fs.StringVar(&l.level, "log-level", def, "log level: trace, debug, info, warn or error")
	fs.StringVar(&l.format, "log-format", "text", `log format: "text" or "json"`)
}

func (l *logFlags) logger(stderr io.Writer) (hclog.Logger, error) {
	level := hclog.LevelFromString(l.level)
	if level == hclog.NoLevel {
		return nil, fmt.Errorf("unknown log level %q (want trace, debug, info, warn or error)", l.level)
	}
	if l.format != "text" && l.format != "json" {
		return nil, fmt.Errorf("unknown log format %q (want text or json)", l.format)
	}
	// Every line goes through secrets.MaskURLs: errors quote upstream
	// URLs, whose query may carry a token.
	log := hclog.New(&hclog.LoggerOptions{
		Name:       "mcphost",
		Level:      level,
		Output:     secrets.URLMaskingWriter(stderr),
		JSONFormat: l.format == "json",
		Color:      colorOption(stderr, l.format),
	})
	if l.format == "json" {
		return durationLogger{log}, nil
	}
	return log, nil
}

// colorOption colours text logs on a terminal, unless NO_COLOR is set.
// It decides itself: hclog's AutoColor would look at the masking writer
// in front of w, which is no terminal.
func colorOption(w io.Writer, format string) hclog.ColorOption {
	if format == "text" && isTerminal(w) && os.Getenv("NO_COLOR") == "" {
		return hclog.ForceColor
	}
	return hclog.ColorOff
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

type flagSetT = flag.FlagSet

func envToken() string { return os.Getenv("MCPHOST_TOKEN") }

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

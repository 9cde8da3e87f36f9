package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/internal/clientconfig"
)

const importUsage = `usage: mcphost import [FILE...] [--admin URL] [--key KEY]

Reads the MCP servers that other clients are set up with and prints them as
mcphost server blocks (HCL) on stdout; the environment variables to set and
what was not carried over go to stderr. A FILE ("-" for stdin) is one of:
  Claude Desktop   claude_desktop_config.json
  Claude Code      .mcp.json, ~/.claude.json (with each project's servers)
  Cursor           ~/.cursor/mcp.json, .cursor/mcp.json
  VS Code          .vscode/mcp.json, or the "mcp" of its settings.json
  MCP registry     server.json, or a registry API answer that holds one
With no FILE it reads each of those that exists where its client keeps it.

A credential written in clear (a token in env, an Authorization header, an
API key argument, a URL's password or token parameter) becomes env("NAME"):
its value is never written. Client variables (${VAR}, ${env:VAR},
${input:ID}) become env("VAR") too.

    mcphost import ~/.config/Claude/claude_desktop_config.json >> config.hcl
    mcphost import server.json --admin http://127.0.0.1:7701

With --admin the servers are added to a running mcphost through its admin
API instead (docs/admin-api.md): values the source holds in clear are sent
there, where the store seals them; references are read from this
environment. Exit status 1 when a server could not be added.`

func runImport(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("import", importUsage, stdout, stderr)
	var o serversOptions
	fs.StringVar(&o.admin, "admin", "", "add the servers through this admin API instead of printing them")
	fs.StringVar(&o.key, "key", "", "admin credential (default $MCPHOST_ADMIN_KEY, else $MCPHOST_TOKEN)")
	files, err := fs.parse(args)
	if err != nil {
		return err
	}
	found := len(files) == 0
	if found {
		if files = knownClientConfigs(); len(files) == 0 {
			fmt.Fprintf(stderr, "mcphost import: no client config found in the usual places:\n  %s\nName a file.\n", strings.Join(clientConfigPlaces(), "\n  "))
			return exitError(1)
		}
		fmt.Fprintf(stderr, "mcphost import: reading %s\n", strings.Join(files, ", "))
	}
	im := clientconfig.NewImporter()
	type read struct {
		file string
		res  *clientconfig.Result
	}
	var reads []read
	for _, f := range files {
		data, err := readImportFile(f, stdin)
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		res, err := im.Read(data)
		if found && errors.Is(err, clientconfig.ErrUnknownFormat) {
			fmt.Fprintf(stderr, "mcphost import: %s lists no servers\n", f)
			continue
		}
		if err != nil {
			return fmt.Errorf("import: %s: %w", f, err)
		}
		reads = append(reads, read{f, res})
	}
	servers := 0
	for _, r := range reads {
		servers += len(r.res.Servers)
		if rep := r.res.Report(); rep != "" {
			fmt.Fprintf(stderr, "%s (%s):\n%s", r.file, r.res.Format, indent(rep))
		}
	}
	if servers == 0 {
		fmt.Fprintln(stderr, "mcphost import: no server to import")
		return exitError(1)
	}
	if o.admin == "" {
		for i, r := range reads {
			if len(r.res.Servers) == 0 {
				continue
			}
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			if _, err := stdout.Write(clientconfig.HCL(filepath.Base(r.file), r.res.Servers)); err != nil {
				return err
			}
		}
		return nil
	}
	o.resolve(true)
	c := &adminClient{base: o.base, key: o.key, stdout: stdout, stderr: stderr, hc: &http.Client{}, command: "import"}
	failed := 0
	for _, r := range reads {
		for _, s := range r.res.Servers {
			spec, err := importSpec(s)
			if err == nil {
				err = c.add(ctx, spec)
			} else {
				fmt.Fprintf(stderr, "mcphost import: server %s: %v\n", s.Name, err)
			}
			if err != nil {
				failed++
			}
		}
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "mcphost import: %d of %d servers not added\n", failed, servers)
		return exitError(1)
	}
	return nil
}

// importSpec is s as the admin API takes it, each reference resolved.
func importSpec(s clientconfig.Server) (config.ServerSpec, error) {
	spec := config.ServerSpec{Name: s.Name, Transport: s.Transport, Command: s.Command, Cwd: s.Cwd}
	var errs []error
	get := func(v clientconfig.Value) string {
		out, err := v.Resolve(os.LookupEnv)
		errs = append(errs, err)
		return out
	}
	for i, a := range s.Args {
		spec.Args = append(spec.Args, get(a))
		if holdsSecret(a) { // sealed in the store, never shown (secret_args)
			spec.SecretArgs = append(spec.SecretArgs, i)
		}
	}
	pairs := func(ps []clientconfig.Pair) map[string]string {
		if len(ps) == 0 {
			return nil
		}
		m := make(map[string]string, len(ps))
		for _, p := range ps {
			m[p.Name] = get(p.Value)
		}
		return m
	}
	spec.Env, spec.Headers = pairs(s.Env), pairs(s.Headers)
	if s.Transport != "stdio" {
		spec.URL = get(s.URL)
		spec.SecretURL = holdsSecret(s.URL)
	}
	return spec, errors.Join(errs...)
}

// holdsSecret reports whether v stands for a credential: one the source
// held in clear, or a variable the source called a secret (then read from
// this environment); either way the store seals it.
func holdsSecret(v clientconfig.Value) bool {
	for _, p := range v {
		if p.HasClear || p.Secret {
			return true
		}
	}
	return false
}

func readImportFile(name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(io.LimitReader(stdin, 16<<20))
	}
	return os.ReadFile(name)
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}

// clientConfigPlaces are where the clients keep their server lists, the
// per-user ones first, then the current directory's.
func clientConfigPlaces() []string {
	var out []string
	if dir, err := os.UserConfigDir(); err == nil {
		out = append(out,
			filepath.Join(dir, "Claude", "claude_desktop_config.json"),
			filepath.Join(dir, "Code", "User", "mcp.json"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		out = append(out, filepath.Join(home, ".claude.json"), filepath.Join(home, ".cursor", "mcp.json"))
	}
	return append(out, ".mcp.json", filepath.Join(".cursor", "mcp.json"), filepath.Join(".vscode", "mcp.json"))
}

// knownClientConfigs are the places that hold a file.
func knownClientConfigs() []string {
	var out []string
	for _, p := range clientConfigPlaces() {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			out = append(out, p)
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			out = append(out, p) // unreadable: Read says why
		}
	}
	return out
}

package main

// The definition of a server, from the flags of add, update and test: whole
// (a config.ServerSpec) or as the fields to change (a JSON merge patch).

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/upstream"
)

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
	secretArgs                           listFlag
	secretURL                            bool
	file                                 string
	command                              []string
	hasCommand                           bool
}

func (d *defFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.url, "url", "", "the URL of a remote server")
	fs.StringVar(&d.transport, "transport", "", "stdio, sse or streamable-http (default: stdio with a command, streamable-http with --url)")
	fs.Var(&d.env, "env", "an environment variable K=V of a stdio server (repeatable)")
	fs.Var(&d.headers, "header", `an HTTP header "K: V" of a remote server (repeatable)`)
	fs.Var(&d.secretArgs, "secret-arg", "the position N (from 0, after the command) of an arg that is a secret: stored sealed, shown masked (repeatable)")
	fs.BoolVar(&d.secretURL, "secret-url", false, "the whole URL is a secret, its path included: stored sealed, shown masked")
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
	for _, n := range []string{"url", "transport", "env", "header", "secret-arg", "secret-url", "cwd", "timeout", "connect-timeout", "idle-timeout", "sessions", "max-sessions"} {
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
	secretArgs, err := positions(d.secretArgs)
	if err != nil {
		return usage(err.Error())
	}
	s := config.ServerSpec{Name: name, Transport: d.transport, Cwd: d.cwd, URL: d.url, Env: stringMap(env), Headers: stringMap(headers),
		Timeout: d.timeout, IdleTimeout: d.idleTimeout, ConnectTimeout: d.connectTimeout, Sessions: d.sessions, MaxSessions: d.maxSessions,
		SecretArgs: secretArgs, SecretURL: d.secretURL}
	if d.hasCommand {
		s.Command, s.Args = d.command[0], d.command[1:]
	}
	if s.Transport == "" {
		s.Transport = upstream.TransportStreamableHTTP
		if d.hasCommand {
			s.Transport = upstream.TransportStdio
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
	if given["secret-arg"] {
		ps, err := positions(d.secretArgs)
		if err != nil {
			return nil, err
		}
		p["secret_args"] = ps
	}
	if given["secret-url"] {
		p["secret_url"] = map[bool]any{true: true, false: nil}[d.secretURL]
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

// positions reads the values of --secret-arg.
func positions(vals []string) ([]int, error) {
	var out []int
	for _, v := range vals {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--secret-arg %q is not a position: give the number of the arg, from 0 (the first after the command)", v)
		}
		out = append(out, n)
	}
	return out, nil
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

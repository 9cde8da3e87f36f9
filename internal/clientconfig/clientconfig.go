// Package clientconfig reads the MCP servers that other clients are set up
// with (the mcpServers of Claude Desktop, Claude Code and Cursor, the
// servers of VS Code) and the MCP registry's server.json, as mcphost server
// definitions. A credential found in clear becomes a reference to an
// environment variable, so that what is written never holds it; what cannot
// be carried over is said in a note.
package clientconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tailscale/hujson"
)

// Format is what a file was read as.
type Format string

// The formats Parse recognises.
const (
	// MCPServers is an "mcpServers" object: Claude Desktop's
	// claude_desktop_config.json, Claude Code's .mcp.json and ~/.claude.json
	// (with its per-project lists), Cursor's mcp.json.
	MCPServers Format = "mcpServers"
	// VSCode is VS Code's mcp.json ("servers", "inputs") or the "mcp" object
	// of its settings.json.
	VSCode Format = "vscode"
	// Registry is the MCP registry's server.json, or a registry API answer
	// that wraps one in "server".
	Registry Format = "server.json"
)

// maxInput bounds what Parse reads: client configs are kilobytes.
const maxInput = 8 << 20

// Result is what Parse found in one file.
type Result struct {
	Format  Format
	Servers []Server
	// Notes say what was not carried over, or must be done by hand, each
	// naming its server.
	Notes []string
	// Env are the environment variables the definitions read, in the order
	// first used: mcphost needs each set when it runs them.
	Env []EnvVar
}

// EnvVar is one environment variable a definition reads.
type EnvVar struct {
	Name string
	// Why says what it stands for ("server github: env GITHUB_TOKEN").
	Why string
	// Secret: the source called it a secret, or held a credential in clear
	// where it now stands.
	Secret bool
	// InSource: the source held its value, which is not written.
	InSource bool
}

// Server is one server definition.
type Server struct {
	Name string
	// From says where in the file it came from ("mcpServers.github").
	From      string
	Transport string // "stdio", "sse" or "streamable-http"
	Command   string
	Args      []Value
	Env       []Pair
	Cwd       string
	URL       Value
	Headers   []Pair
}

// Pair is a named value: an environment variable or a header.
type Pair struct {
	Name  string
	Value Value
}

// Value is a string made of literal text and references to environment
// variables.
type Value []Part

// Part is literal text, or a reference to an environment variable (Env
// set), with an optional default.
type Part struct {
	Text string
	Env  string
	// Default is used when Env is unset, if HasDefault.
	Default    string
	HasDefault bool
	// Clear is the value the source held in clear for Env (HasClear): it is
	// never written, only sent where the definition is added directly.
	Clear    string
	HasClear bool
	// Secret: Env stands for a credential, whether or not the source held
	// its value.
	Secret bool
}

// addText appends literal text, to the last part when it is text too.
func (v *Value) addText(t string) {
	if t == "" {
		return
	}
	if n := len(*v); n > 0 && (*v)[n-1].Env == "" {
		(*v)[n-1].Text += t
		return
	}
	*v = append(*v, Part{Text: t})
}

// Literal is a Value of text alone.
func Literal(s string) Value { return Value{{Text: s}} }

// IsLiteral reports whether v holds no reference.
func (v Value) IsLiteral() bool {
	for _, p := range v {
		if p.Env != "" {
			return false
		}
	}
	return true
}

// String is v with each reference written as ${env:NAME}, for messages.
func (v Value) String() string {
	var b strings.Builder
	for _, p := range v {
		if p.Env != "" {
			b.WriteString("${env:" + p.Env + "}")
		} else {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// Resolve is v's value: references are taken from the value the source held
// in clear, else from lookup, else from their default. It fails naming the
// variables that have none.
func (v Value) Resolve(lookup func(string) (string, bool)) (string, error) {
	var b strings.Builder
	var missing []string
	for _, p := range v {
		switch {
		case p.Env == "":
			b.WriteString(p.Text)
		case p.HasClear:
			b.WriteString(p.Clear)
		default:
			if s, ok := lookup(p.Env); ok {
				b.WriteString(s)
			} else if p.HasDefault {
				b.WriteString(p.Default)
			} else {
				missing = append(missing, p.Env)
			}
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("set %s: the definition reads %s", strings.Join(missing, ", "), plural(len(missing), "it", "them"))
	}
	return b.String(), nil
}

func plural(n int, one, more string) string {
	if n == 1 {
		return one
	}
	return more
}

// ErrUnknownFormat is Parse's error for JSON that none of the formats fits.
var ErrUnknownFormat = errors.New(`no MCP servers found: want an "mcpServers" object (Claude Desktop, Claude Code, Cursor), VS Code's "servers" (or settings.json's "mcp"), or a registry server.json ("packages" or "remotes")`)

// Importer reads client configs one after the other, keeping server and
// variable names unique across them.
type Importer struct {
	names map[string]bool   // mcphost names taken
	envs  map[string]string // variable -> "=" and the clear value it stands for, or ""
}

// NewImporter returns an Importer that has read nothing.
func NewImporter() *Importer {
	return &Importer{names: map[string]bool{}, envs: map[string]string{}}
}

// Parse reads one file alone: NewImporter().Read(data).
func Parse(data []byte) (*Result, error) { return NewImporter().Read(data) }

// Read reads data (JSON, or JSON with comments and trailing commas as VS
// Code writes it) in whichever format it is.
func (im *Importer) Read(data []byte) (*Result, error) {
	if len(data) > maxInput {
		return nil, fmt.Errorf("clientconfig: %d bytes, more than a client config (%d at most)", len(data), maxInput)
	}
	std, err := hujson.Standardize(slices.Clone(data))
	if err != nil {
		return nil, fmt.Errorf("clientconfig: not JSON: %w", err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(std, &top); err != nil {
		return nil, fmt.Errorf("clientconfig: not a JSON object: %w", err)
	}
	// A file that fails takes no names: the reader works on copies.
	r := &reader{res: &Result{}, names: maps.Clone(im.names), envs: maps.Clone(im.envs)}
	switch {
	case top["mcpServers"] != nil || top["projects"] != nil:
		r.res.Format = MCPServers
		err = r.mcpServers(top)
	case top["servers"] != nil:
		r.res.Format = VSCode
		err = r.vscode(top)
	case top["mcp"] != nil:
		var mcp map[string]json.RawMessage
		if err := json.Unmarshal(top["mcp"], &mcp); err != nil {
			return nil, fmt.Errorf(`clientconfig: "mcp": %w`, err)
		}
		r.res.Format = VSCode
		err = r.vscode(mcp)
	case top["packages"] != nil || top["remotes"] != nil:
		r.res.Format = Registry
		err = r.registry(std)
	case top["server"] != nil:
		r.res.Format = Registry
		err = r.registry(top["server"])
	default:
		return nil, ErrUnknownFormat
	}
	if err != nil {
		return nil, err
	}
	im.names, im.envs = r.names, r.envs
	return r.res, nil
}

// reader gathers one file's servers.
type reader struct {
	res    *Result
	names  map[string]bool   // mcphost names taken
	envs   map[string]string // variable -> the clear value it stands for ("" for none)
	inputs map[string]vscodeInput
}

func (r *reader) note(server, format string, args ...any) {
	r.res.Notes = append(r.res.Notes, "server "+server+": "+fmt.Sprintf(format, args...))
}

// reserve gives a source's server a name of its own: the source's, with
// anything outside [A-Za-z0-9_-] replaced, numbered when taken. Notes and
// variables then use it.
func (r *reader) reserve(source string) string {
	base := serverName(source)
	name := base
	for i := 2; r.names[name]; i++ {
		name = fmt.Sprintf("%s_%d", base, i)
	}
	r.names[name] = true
	if name != source {
		r.note(name, "named %q in the source", source)
	}
	return name
}

func serverName(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "server"
	}
	return b.String()
}

// envName is an environment variable name made of words: upper case, every
// other byte an underscore.
func envName(words ...string) string {
	var b strings.Builder
	for _, w := range words {
		for _, c := range w {
			switch {
			case c >= 'a' && c <= 'z':
				b.WriteRune(c - 'a' + 'A')
			case c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
				b.WriteRune(c)
			default:
				b.WriteByte('_')
			}
		}
		b.WriteByte('_')
	}
	n := strings.Trim(b.String(), "_")
	for strings.Contains(n, "__") {
		n = strings.ReplaceAll(n, "__", "_")
	}
	if n == "" || n[0] >= '0' && n[0] <= '9' {
		n = "V_" + n
	}
	return n
}

// use records that a definition reads variable name; clear is the value the
// source held for it, if it held one. Two different clear values for one
// name get two names, the second prefixed with the server's.
func (r *reader) use(server, name, why string, clear *string) string {
	key := ""
	if clear != nil {
		key = "=" + *clear
	}
	if prev, ok := r.envs[name]; ok && clear != nil && prev != "" && prev != key {
		base := envName(server, name)
		name = base
		for i := 2; ; i++ {
			if p, ok := r.envs[name]; !ok || p == key {
				break
			}
			name = fmt.Sprintf("%s_%d", base, i)
		}
	}
	if _, ok := r.envs[name]; !ok {
		r.envs[name] = key
		r.res.Env = append(r.res.Env, EnvVar{Name: name, Why: "server " + server + ": " + why, Secret: clear != nil, InSource: clear != nil})
	} else if clear != nil && r.envs[name] == "" {
		r.envs[name] = key
	}
	return name
}

// secretRef is a reference to name standing for a clear value.
func (r *reader) secretRef(server, name, why, clear string) Part {
	name = r.use(server, name, why, &clear)
	return Part{Env: name, Clear: clear, HasClear: true, Secret: true}
}

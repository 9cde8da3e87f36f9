package clientconfig

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
)

// The MCP registry's server.json (schema of 2025-12-11): a server's
// packages (run locally: npm, pypi, oci, nuget) and remotes (reached over
// HTTP), each with its inputs: arguments, environment variables, headers,
// URL variables. A remote is preferred when there is one, as it needs no
// runtime on the gateway's machine; the other choices are named in a note.

type serverJSON struct {
	Name     string         `json:"name"`
	Packages []regPackage   `json:"packages"`
	Remotes  []regTransport `json:"remotes"`
}

type regPackage struct {
	RegistryType     string        `json:"registryType"`
	Identifier       string        `json:"identifier"`
	Version          string        `json:"version"`
	RuntimeHint      string        `json:"runtimeHint"`
	RuntimeArguments []regArgument `json:"runtimeArguments"`
	PackageArguments []regArgument `json:"packageArguments"`
	Environment      []regKeyValue `json:"environmentVariables"`
	Transport        regTransport  `json:"transport"`
}

type regTransport struct {
	Type      string              `json:"type"`
	URL       string              `json:"url"`
	Headers   []regKeyValue       `json:"headers"`
	Variables map[string]regInput `json:"variables"`
}

// regInput is the schema's Input: a value given, a default, or one the
// user must supply (isRequired), perhaps a secret, with {variables}.
type regInput struct {
	Description string              `json:"description"`
	Value       *string             `json:"value"`
	Default     *string             `json:"default"`
	IsRequired  bool                `json:"isRequired"`
	IsSecret    bool                `json:"isSecret"`
	Variables   map[string]regInput `json:"variables"`
}

type regKeyValue struct {
	regInput
	Name string `json:"name"`
}

type regArgument struct {
	regInput
	Type       string `json:"type"` // "positional" | "named"
	Name       string `json:"name"`
	ValueHint  string `json:"valueHint"`
	IsRepeated bool   `json:"isRepeated"`
}

func (r *reader) registry(raw json.RawMessage) error {
	var sj serverJSON
	if err := json.Unmarshal(raw, &sj); err != nil {
		return fmt.Errorf("clientconfig: server.json: %w", err)
	}
	name := sj.Name
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if len(sj.Packages) == 0 && len(sj.Remotes) == 0 {
		return fmt.Errorf("clientconfig: server.json %q has neither packages nor remotes", sj.Name)
	}
	name = r.reserve(name)
	for _, rem := range sj.Remotes {
		if rem.Type != "streamable-http" && rem.Type != "sse" {
			r.note(name, "remote transport %q is not one mcphost speaks", rem.Type)
			continue
		}
		s := Server{Name: name, From: "remotes (" + rem.Type + ")", Transport: rem.Type}
		s.URL = r.guardURL(name, r.template(name, "url", rem.URL, rem.Variables))
		for _, h := range rem.Headers {
			s.Headers = append(s.Headers, Pair{Name: h.Name, Value: r.keyValue(name, "header "+h.Name, envName(name, h.Name), h, true)})
		}
		if len(sj.Packages) > 0 || len(sj.Remotes) > 1 {
			r.note(name, "the server.json offers %d remotes and %d packages; the first remote mcphost speaks is used", len(sj.Remotes), len(sj.Packages))
		}
		r.res.Servers = append(r.res.Servers, s)
		return nil
	}
	for _, p := range sj.Packages {
		if s, ok := r.regPackage(name, p); ok {
			if len(sj.Packages) > 1 {
				r.note(name, "the server.json offers %d packages; the %s one is used", len(sj.Packages), p.RegistryType)
			}
			r.res.Servers = append(r.res.Servers, s)
			return nil
		}
	}
	r.note(name, "no package or remote of the server.json is one mcphost can run; nothing imported")
	return nil
}

// regPackage is the command line that runs p, or false (with a note).
func (r *reader) regPackage(name string, p regPackage) (Server, bool) {
	if p.Transport.Type != "" && p.Transport.Type != "stdio" {
		r.note(name, "package %s serves %s on its own port: start it yourself and add its url", p.Identifier, p.Transport.Type)
		return Server{}, false
	}
	s := Server{Name: name, From: "packages (" + p.RegistryType + " " + p.Identifier + ")", Transport: "stdio"}
	env := map[string]Value{}
	for _, e := range p.Environment {
		env[e.Name] = r.keyValue(name, "env "+e.Name, e.Name, e, false)
	}
	vars := func(where string, in []regArgument) []Value {
		var out []Value
		for i, a := range in {
			out = append(out, r.argument(name, fmt.Sprintf("%s %d", where, i+1), a)...)
		}
		return out
	}
	runtime := vars("runtime argument", p.RuntimeArguments)
	pkg := vars("package argument", p.PackageArguments)
	ref := p.Identifier
	switch p.RegistryType {
	case "npm":
		s.Command = or(p.RuntimeHint, "npx")
		if p.Version != "" {
			ref += "@" + p.Version
		}
		if s.Command == "npx" && !hasLiteral(runtime, "-y", "--yes") {
			runtime = append([]Value{Literal("-y")}, runtime...)
		}
		s.Args = slices.Concat(runtime, []Value{Literal(ref)}, pkg)
	case "pypi":
		s.Command = or(p.RuntimeHint, "uvx")
		if p.Version != "" {
			ref += "==" + p.Version
		}
		s.Args = slices.Concat(runtime, []Value{Literal(ref)}, pkg)
	case "nuget":
		s.Command = or(p.RuntimeHint, "dnx")
		if p.Version != "" {
			ref += "@" + p.Version
		}
		s.Args = slices.Concat(runtime, []Value{Literal(ref), Literal("--yes")}, pkg)
		if len(pkg) > 0 {
			s.Args = slices.Concat(runtime, []Value{Literal(ref), Literal("--yes"), Literal("--")}, pkg)
		}
	case "oci":
		s.Command = or(p.RuntimeHint, "docker")
		if p.Version != "" && !strings.Contains(path.Base(ref), ":") && !strings.Contains(ref, "@") {
			ref += ":" + p.Version
		}
		args := []Value{Literal("run"), Literal("-i"), Literal("--rm")}
		for _, k := range slices.Sorted(maps.Keys(env)) {
			args = append(args, Literal("-e"), Literal(k)) // the value comes from env below
		}
		s.Args = slices.Concat(args, runtime, []Value{Literal(ref)}, pkg)
	default:
		r.note(name, "package type %q (%s) is not one mcphost knows how to run", p.RegistryType, p.Identifier)
		return Server{}, false
	}
	s.Args = r.guardArgs(name, s.Args)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		s.Env = append(s.Env, Pair{Name: k, Value: env[k]})
	}
	return s, true
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func hasLiteral(args []Value, words ...string) bool {
	for _, a := range args {
		if a.IsLiteral() && slices.Contains(words, a.String()) {
			return true
		}
	}
	return false
}

// argument is a package argument as command-line words: a positional's
// value, a named one's --name=value (or -n value).
func (r *reader) argument(server, where string, a regArgument) []Value {
	label := or(a.ValueHint, strings.TrimLeft(a.Name, "-"))
	if label == "" {
		label = strings.ReplaceAll(where, " ", "_")
	}
	has := a.Value != nil || a.Default != nil || a.IsRequired
	if a.Type == "named" {
		if !has {
			return nil // an optional flag the publisher gives no value for
		}
		v := r.regValue(server, where+" "+a.Name, envName(server, label), a.regInput)
		if strings.HasPrefix(a.Name, "--") {
			return []Value{append(Value{{Text: a.Name + "="}}, v...)}
		}
		return []Value{Literal(a.Name), v}
	}
	if !has {
		return nil
	}
	return []Value{r.regValue(server, where, envName(server, label), a.regInput)}
}

// keyValue is the value of an environment variable or header; env, the
// variable that stands for it when the user must supply it.
func (r *reader) keyValue(server, where, env string, kv regKeyValue, header bool) Value {
	v := r.regValue(server, where, env, kv.regInput)
	if header {
		return r.guardHeader(server, kv.Name, v)
	}
	return r.guardEnv(server, kv.Name, v)
}

// regValue is the value of a registry Input: a secret or a value the user
// must give is a reference to env; a value or default is written, with its
// {variables} resolved the same way.
func (r *reader) regValue(server, where, env string, in regInput) Value {
	switch {
	case in.IsSecret && in.Value == nil:
		name := r.use(server, env, where+": "+or(in.Description, "a secret"), nil)
		r.res.Env[slices.IndexFunc(r.res.Env, func(e EnvVar) bool { return e.Name == name })].Secret = true
		return Value{{Env: name, Secret: true}}
	case in.Value != nil:
		return r.template(server, where, *in.Value, in.Variables)
	case in.Default != nil:
		return r.template(server, where, *in.Default, in.Variables)
	default:
		name := r.use(server, env, where+": "+or(in.Description, "required"), nil)
		return Value{{Env: name}}
	}
}

// template resolves the {name} variables of s from vars.
func (r *reader) template(server, where, s string, vars map[string]regInput) Value {
	var v Value
	text := v.addText
	for {
		i := strings.IndexByte(s, '{')
		j := strings.IndexByte(s[max(i, 0):], '}')
		if i < 0 || j < 0 {
			break
		}
		key := s[i+1 : i+j]
		in, ok := vars[key]
		if !ok || !varName.MatchString(key) {
			text(s[:i+j+1])
			s = s[i+j+1:]
			continue
		}
		text(s[:i])
		s = s[i+j+1:]
		for _, p := range r.regValue(server, where+" {"+key+"}", envName(server, key), in) {
			if p.Env == "" {
				text(p.Text)
			} else {
				v = append(v, p)
			}
		}
	}
	text(s)
	if len(v) == 0 {
		v = Literal("")
	}
	return v
}

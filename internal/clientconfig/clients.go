package clientconfig

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
)

// entry is one server as Claude Desktop, Claude Code, Cursor and VS Code
// write it. Remote servers have a url and, but for Cursor's, a type.
type entry struct {
	Type     string            `json:"type"`
	Command  string            `json:"command"`
	Args     []string          `json:"args"`
	Env      map[string]string `json:"env"`
	Cwd      string            `json:"cwd"`
	URL      string            `json:"url"`
	Headers  map[string]string `json:"headers"`
	Disabled bool              `json:"disabled"`
}

// carried are the entry fields read; others are named in a note.
var carried = []string{"type", "transport", "command", "args", "env", "cwd", "url", "serverUrl", "headers", "disabled", "envFile"}

func (r *reader) mcpServers(top map[string]json.RawMessage) error {
	if raw := top["mcpServers"]; raw != nil {
		if err := r.serverList("mcpServers", raw); err != nil {
			return err
		}
	}
	// ~/.claude.json keeps each project's own list.
	if raw := top["projects"]; raw != nil {
		var projects map[string]struct {
			MCPServers json.RawMessage `json:"mcpServers"`
		}
		if err := json.Unmarshal(raw, &projects); err != nil {
			return fmt.Errorf(`clientconfig: "projects": %w`, err)
		}
		for _, dir := range slices.Sorted(maps.Keys(projects)) {
			if p := projects[dir]; len(p.MCPServers) > 0 && string(p.MCPServers) != "null" {
				if err := r.serverList(fmt.Sprintf("projects[%q].mcpServers", dir), p.MCPServers); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// vscodeInput is one of VS Code's "inputs": a value it prompts for.
type vscodeInput struct {
	ID          string `json:"id"`
	Description string `json:"description"`
	Password    bool   `json:"password"`
	Default     string `json:"default"`
}

func (r *reader) vscode(top map[string]json.RawMessage) error {
	if raw := top["inputs"]; raw != nil {
		var inputs []vscodeInput
		if err := json.Unmarshal(raw, &inputs); err != nil {
			return fmt.Errorf(`clientconfig: "inputs": %w`, err)
		}
		r.inputs = map[string]vscodeInput{}
		for _, in := range inputs {
			r.inputs[in.ID] = in
		}
	}
	return r.serverList("servers", top["servers"])
}

// input is the reference for ${input:id}: an environment variable named
// after the input, which VS Code would have asked for.
func (r *reader) input(server, where, id string) Part {
	in, known := r.inputs[id]
	name := envName(id)
	if known && in.Password {
		name = r.use(server, name, where+" (VS Code input "+id+")", nil)
		r.res.Env[len(r.res.Env)-1].Secret = true
	} else {
		name = r.use(server, name, where+" (VS Code input "+id+")", nil)
	}
	p := Part{Env: name, Secret: known && in.Password}
	if known && in.Default != "" && !in.Password {
		p.Default, p.HasDefault = in.Default, true
	}
	return p
}

// serverList reads an object of entries by name, at where in the file.
func (r *reader) serverList(where string, raw json.RawMessage) error {
	var list map[string]json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return fmt.Errorf("clientconfig: %s: want an object of servers by name: %w", where, err)
	}
	for _, name := range slices.Sorted(maps.Keys(list)) {
		if err := r.entry(name, where+"."+name, list[name]); err != nil {
			return err
		}
	}
	return nil
}

func (r *reader) entry(source, where string, raw json.RawMessage) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return fmt.Errorf("clientconfig: %s: want an object: %w", where, err)
	}
	var e entry
	if err := json.Unmarshal(raw, &e); err != nil {
		return fmt.Errorf("clientconfig: %s: %w", where, err)
	}
	if e.URL == "" && fields["serverUrl"] != nil { // Windsurf's name for it
		_ = json.Unmarshal(fields["serverUrl"], &e.URL)
	}
	if e.Type == "" && fields["transport"] != nil {
		_ = json.Unmarshal(fields["transport"], &e.Type)
	}
	if e.Disabled {
		r.res.Notes = append(r.res.Notes, fmt.Sprintf("server %s: disabled in the source, not imported", source))
		return nil
	}
	s := Server{From: where}
	switch strings.ToLower(e.Type) {
	case "", "stdio", "local":
		if e.Command == "" {
			if e.URL == "" {
				r.res.Notes = append(r.res.Notes, fmt.Sprintf("server %s: neither a command nor a url, not imported", source))
				return nil
			}
			s.Transport = guessRemote(e.URL)
		} else {
			s.Transport = "stdio"
		}
	case "sse":
		s.Transport = "sse"
	case "http", "streamable-http", "streamablehttp", "streamable_http", "remote":
		s.Transport = "streamable-http"
	default:
		r.res.Notes = append(r.res.Notes, fmt.Sprintf("server %s: transport %q is not one mcphost speaks, not imported", source, e.Type))
		return nil
	}
	name := r.reserve(source)
	s.Name = name
	if s.Transport == "stdio" {
		s.Command = e.Command
		args := make([]Value, len(e.Args))
		for i, a := range e.Args {
			args[i] = r.expand(name, fmt.Sprintf("argument %d", i+1), a)
		}
		s.Args = r.guardArgs(name, args)
		for _, k := range slices.Sorted(maps.Keys(e.Env)) {
			s.Env = append(s.Env, Pair{Name: k, Value: r.guardEnv(name, k, r.expand(name, "env "+k, e.Env[k]))})
		}
		s.Cwd = e.Cwd
	} else {
		s.URL = r.guardURL(name, r.expand(name, "url", e.URL))
		for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
			s.Headers = append(s.Headers, Pair{Name: k, Value: r.guardHeader(name, k, r.expand(name, "header "+k, e.Headers[k]))})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if !slices.Contains(carried, k) {
			r.note(name, "%q is not carried over", k)
		}
	}
	if fields["envFile"] != nil {
		r.note(name, "set the variables of its envFile in mcphost's environment and add them to env")
	}
	r.res.Servers = append(r.res.Servers, s)
	return nil
}

// guessRemote is the transport of a url given without a type (Cursor's): a
// path ending in /sse is the old SSE transport, anything else streamable HTTP.
func guessRemote(u string) string {
	if p, _, _ := strings.Cut(u, "?"); path.Base(p) == "sse" {
		return "sse"
	}
	return "streamable-http"
}

package policies

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
)

// Mention kinds.
const (
	MentionServer   = "server"
	MentionTool     = "tool"
	MentionPrompt   = "prompt"
	MentionResource = "resource"
)

// Mention is one server, tool, prompt or resource a user picked for a
// conversation.
type Mention struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// mentions is builtin:mentions: a caller sees the servers, tools, prompts
// and resources it mentions, and never more than allowed_servers permits.
// Of each kind (tools, prompts, resources) a caller that mentions no server
// and nothing of that kind sees all. Configuration:
//
//	meta_key        = "mentions"   # where in the request's _meta the mentions are
//	clients         = { "my-app" = [{ kind = "server", name = "files" }] }
//	                               # mentions by client name, added to the request's;
//	                               # "server:files", "tool:clock__current_time",
//	                               # "prompt:notes__summarize" and "resource:notes://a" also do
//	allowed_servers = { files = ["read_*"], clock = ["*"] }
//	                               # if set: only these servers, and of each only
//	                               # the tools matching its globs (upstream or exposed
//	                               # name); the prompts and resources of a listed
//	                               # server are all allowed
//
// and the caller condition (callerCondition): a caller it does not apply to
// passes untouched, seeing everything whatever it mentions.
type mentions struct {
	refusal
	callers    callerCondition
	metaKey    string
	clients    map[string][]Mention
	allowed    map[string]globs
	hasAllowed bool
}

// MaxMentions bounds how many mentions one request may carry.
const MaxMentions = 1000

func newMentions() pdk.Policy {
	m := &mentions{}
	return pdk.Policy{
		Name:      "mentions",
		Version:   Version,
		Configure: m.configure,
		ToolsList: m.toolsList,
		ToolCall:  m.toolCall,
		List:      m.list,
		Request:   m.request,
		// What a caller mentioned decides; the arguments never do.
		// Requests upstreams send to the client are not its business.
		Hints: func() abi.Hints {
			return abi.Hints{ListPerTool: true, CallIgnoresArguments: true, Methods: map[string][]string{
				abi.HookList:    listMethods,
				abi.HookRequest: clientRequests,
			}}
		},
	}
}

func (m *mentions) configure(cfg pdk.ConfigSource) error {
	if err := m.refusal.configure(cfg); err != nil {
		return err
	}
	if err := m.callers.configure(cfg); err != nil {
		return err
	}
	m.metaKey = cfg.String("meta_key", "mentions")
	if raw, ok := cfg.Lookup("clients"); ok && raw != "" {
		var clients map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &clients); err != nil {
			return fmt.Errorf(`config "clients": want an object of client name to mentions: %v`, err)
		}
		m.clients = make(map[string][]Mention, len(clients))
		for name, v := range clients {
			list, err := ParseMentions(v)
			if err != nil {
				return fmt.Errorf(`config "clients": %q: %v`, name, err)
			}
			m.clients[name] = list
		}
	}
	if raw, ok := cfg.Lookup("allowed_servers"); ok && raw != "" {
		var allowed map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &allowed); err != nil {
			return fmt.Errorf(`config "allowed_servers": want an object of server name to a list of tool globs: %v`, err)
		}
		m.hasAllowed = true
		m.allowed = make(map[string]globs, len(allowed))
		for server, v := range allowed {
			var patterns []string
			if t := bytes.TrimSpace(v); !bytes.Equal(t, []byte("null")) {
				if err := json.Unmarshal(v, &patterns); err != nil {
					var one string
					if json.Unmarshal(v, &one) != nil {
						return fmt.Errorf(`config "allowed_servers": %q: want a list of tool globs`, server)
					}
					patterns = []string{one}
				}
			}
			gs, err := compileGlobs("allowed_servers", patterns)
			if err != nil {
				return err
			}
			m.allowed[server] = gs
		}
	}
	return nil
}

// ParseMentions decodes a list of mentions: objects {"kind": KIND, "name":
// NAME} or strings "KIND:NAME", where KIND is "server", "tool", "prompt"
// or "resource". Mentions of other kinds are kept (and match nothing), so
// platforms can mention other things in the same list.
func ParseMentions(raw json.RawMessage) ([]Mention, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(t, &items); err != nil {
		return nil, errors.New("mentions must be a list")
	}
	if len(items) > MaxMentions {
		return nil, fmt.Errorf("%d mentions, more than %d", len(items), MaxMentions)
	}
	out := make([]Mention, 0, len(items))
	for i, it := range items {
		var m Mention
		var s string
		if err := json.Unmarshal(it, &s); err == nil {
			kind, name, ok := strings.Cut(s, ":")
			if !ok {
				return nil, fmt.Errorf("mention %d: %q is not KIND:NAME", i, s)
			}
			m = Mention{Kind: kind, Name: name}
		} else if err := json.Unmarshal(it, &m); err != nil {
			return nil, fmt.Errorf("mention %d: want {\"kind\": ..., \"name\": ...}", i)
		}
		if m.Kind == "" || m.Name == "" {
			return nil, fmt.Errorf("mention %d: kind and name are required", i)
		}
		out = append(out, m)
	}
	return out, nil
}

// selection is what one caller mentioned.
type selection struct {
	servers, tools, prompts, resources map[string]bool
	// templates match the URIs that the URI templates among the
	// resource mentions expand to.
	templates []glob
}

// covers reports whether s selects something of a mention kind (tool,
// prompt or resource) on server called name: it, or its server, is
// mentioned, or nothing of its kind and no server is.
func (s *selection) covers(kind, server, name string) bool {
	var named map[string]bool
	switch kind {
	case MentionTool:
		named = s.tools
	case MentionPrompt:
		named = s.prompts
	case MentionResource:
		named = s.resources
	}
	if len(s.servers) == 0 && len(named) == 0 {
		return true
	}
	if s.servers[server] || named[name] {
		return true
	}
	if kind == MentionResource {
		for _, g := range s.templates {
			if g.match(name) {
				return true
			}
		}
	}
	return false
}

// selectionFor gathers the caller's mentions from its request's _meta and
// from the clients configuration.
func (m *mentions) selectionFor(c *abi.Caller) (*selection, error) {
	s := &selection{servers: map[string]bool{}, tools: map[string]bool{}, prompts: map[string]bool{}, resources: map[string]bool{}}
	add := func(list []Mention) {
		for _, mt := range list {
			switch mt.Kind {
			case MentionServer:
				s.servers[mt.Name] = true
			case MentionTool:
				s.tools[mt.Name] = true
			case MentionPrompt:
				s.prompts[mt.Name] = true
			case MentionResource:
				if !s.resources[mt.Name] {
					if g, ok := templateGlob(mt.Name); ok {
						s.templates = append(s.templates, g)
					}
				}
				s.resources[mt.Name] = true
			}
		}
	}
	add(m.clients[c.ClientName])
	if len(c.Meta) > 0 {
		var meta map[string]json.RawMessage
		if err := json.Unmarshal(c.Meta, &meta); err != nil {
			return nil, fmt.Errorf("caller _meta: %v", err)
		}
		list, err := ParseMentions(meta[m.metaKey])
		if err != nil {
			return nil, fmt.Errorf("caller _meta %q: %v", m.metaKey, err)
		}
		add(list)
	}
	return s, nil
}

// templateGlob returns a glob that matches, loosely, the URIs a URI
// template (RFC 6570) expands to: each {expression} matches any run of
// characters. ok is false for a name with no expression, or one longer
// than a configured pattern may be.
func templateGlob(tmpl string) (g glob, ok bool) {
	if len(tmpl) > maxGlob || !strings.Contains(tmpl, "{") {
		return glob{}, false
	}
	g.src = tmpl
	rest := tmpl
	for rest != "" {
		open := strings.IndexByte(rest, '{')
		end := -1
		if open >= 0 {
			end = strings.IndexByte(rest[open:], '}')
		}
		if open < 0 || end < 0 {
			g.toks = append(g.toks, globTok{kind: 'l', lit: rest})
			break
		}
		if open > 0 {
			g.toks = append(g.toks, globTok{kind: 'l', lit: rest[:open]})
		}
		if n := len(g.toks); n == 0 || g.toks[n-1].kind != '*' {
			g.toks = append(g.toks, globTok{kind: '*'})
		}
		ok = true
		rest = rest[open+end+1:]
	}
	return g, ok
}

// allowedServer reports whether allowed_servers lets server's prompts and
// resources through.
func (m *mentions) allowedServer(server string) bool {
	_, ok := m.allowed[server]
	return !m.hasAllowed || ok
}

// visible decides one tool: mentioned (or nothing mentioned), and allowed.
func (m *mentions) visible(s *selection, name, server, tool string) bool {
	if !s.covers(MentionTool, server, name) {
		return false
	}
	if !m.hasAllowed {
		return true
	}
	_, ok := m.allowed[server].match(tool, name)
	return ok
}

func (m *mentions) toolsList(in *abi.ToolsListInput) (*abi.ToolsListOutput, error) {
	if !m.callers.applies(&in.Caller) {
		return &abi.ToolsListOutput{Tools: in.Tools}, nil
	}
	s, err := m.selectionFor(&in.Caller)
	if err != nil {
		return nil, err
	}
	out := &abi.ToolsListOutput{Tools: make([]abi.Tool, 0, len(in.Tools))}
	for _, t := range in.Tools {
		if m.visible(s, t.Name, t.Server, t.Tool) {
			out.Tools = append(out.Tools, t)
		}
	}
	return out, nil
}

func (m *mentions) toolCall(in *abi.ToolCallInput) (*abi.CallDecision, error) {
	if !m.callers.applies(&in.Caller) {
		return pdk.Allow(), nil
	}
	s, err := m.selectionFor(&in.Caller)
	if err != nil {
		return pdk.Denyf("%s: %v", in.Name, err), nil
	}
	if !m.visible(s, in.Name, in.Server, in.Tool) {
		if !s.covers(MentionTool, in.Server, in.Name) {
			return m.refuseCall("%s was not mentioned in this conversation", in.Name), nil
		}
		return m.refuseCall("%s is not among the allowed tools of server %q", in.Name, in.Server), nil
	}
	return pdk.Allow(), nil
}

// mentionKind maps a kind key of allow and deny to its mention kind.
func mentionKind(kind string) string {
	switch kind {
	case kindPrompts:
		return MentionPrompt
	case kindResources:
		return MentionResource
	}
	return ""
}

func (m *mentions) list(in *abi.ListInput) (*abi.ListOutput, error) {
	kind := mentionKind(listKind(in.Method))
	if kind == "" || !m.callers.applies(&in.Caller) {
		return nil, nil
	}
	s, err := m.selectionFor(&in.Caller)
	if err != nil {
		return nil, err
	}
	out := &abi.ListOutput{Items: make([]abi.Item, 0, len(in.Items))}
	for _, it := range in.Items {
		if s.covers(kind, it.Server, it.Name) && m.allowedServer(it.Server) {
			out.Items = append(out.Items, it)
		}
	}
	return out, nil
}

func (m *mentions) request(in *abi.RequestInput) (*abi.RequestDecision, error) {
	kind := mentionKind(requestKind(in))
	if kind == "" || !m.callers.applies(&in.Caller) {
		return nil, nil // a request that names no prompt or resource, or a caller exempt
	}
	s, err := m.selectionFor(&in.Caller)
	if err != nil {
		return denyRequest("%s: %v", in.Name, err), nil
	}
	if !s.covers(kind, in.Server, in.Name) {
		return m.refuseRequest("%s was not mentioned in this conversation", in.Name), nil
	}
	if !m.allowedServer(in.Server) {
		return m.refuseRequest("%s is on server %q, which is not among the allowed servers", in.Name, in.Server), nil
	}
	return nil, nil
}

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
	MentionServer = "server"
	MentionTool   = "tool"
)

// Mention is one server or tool a user picked for a conversation.
type Mention struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// mentions is builtin:mentions: a caller sees the servers and tools it
// mentions (all of them when it mentions none), and never more than
// allowed_servers permits. Configuration:
//
//	meta_key        = "mentions"   # where in the request's _meta the mentions are
//	clients         = { "my-app" = [{ kind = "server", name = "files" }] }
//	                               # mentions by client name, added to the request's;
//	                               # "server:files" and "tool:clock__current_time" also do
//	allowed_servers = { files = ["read_*"], clock = ["*"] }
//	                               # if set: only these servers, and of each only
//	                               # the tools matching its globs (upstream or exposed name)
type mentions struct {
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
		// What a caller mentioned decides; the arguments never do.
		Hints: func() abi.Hints { return abi.Hints{ListPerTool: true, CallIgnoresArguments: true} },
	}
}

func (m *mentions) configure(cfg pdk.ConfigSource) error {
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

// ParseMentions decodes a list of mentions: objects {"kind": "server" |
// "tool", "name": ...} or strings "server:NAME" / "tool:NAME". Mentions of
// other kinds are kept (and match nothing), so platforms can mention other
// things in the same list.
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
	servers map[string]bool
	tools   map[string]bool
}

func (s *selection) empty() bool { return len(s.servers) == 0 && len(s.tools) == 0 }

// selectionFor gathers the caller's mentions from its request's _meta and
// from the clients configuration.
func (m *mentions) selectionFor(c *abi.Caller) (*selection, error) {
	s := &selection{servers: map[string]bool{}, tools: map[string]bool{}}
	add := func(list []Mention) {
		for _, mt := range list {
			switch mt.Kind {
			case MentionServer:
				s.servers[mt.Name] = true
			case MentionTool:
				s.tools[mt.Name] = true
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

// visible decides one tool: mentioned (or nothing mentioned), and allowed.
func (m *mentions) visible(s *selection, name, server, tool string) bool {
	if !s.empty() && !s.servers[server] && !s.tools[name] {
		return false
	}
	if !m.hasAllowed {
		return true
	}
	_, ok := m.allowed[server].match(tool, name)
	return ok
}

func (m *mentions) toolsList(in *abi.ToolsListInput) (*abi.ToolsListOutput, error) {
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
	s, err := m.selectionFor(&in.Caller)
	if err != nil {
		return pdk.Denyf("%s: %v", in.Name, err), nil
	}
	if !m.visible(s, in.Name, in.Server, in.Tool) {
		if !s.empty() && !s.servers[in.Server] && !s.tools[in.Name] {
			return pdk.Denyf("%s was not mentioned in this conversation", in.Name), nil
		}
		return pdk.Denyf("%s is not among the allowed tools of server %q", in.Name, in.Server), nil
	}
	return pdk.Allow(), nil
}

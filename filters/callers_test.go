package filters_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/plugins"
	"github.com/mcphost-project/mcphost/plugins/compat"
)

// TestCallerConditionsWasm runs two built-ins with caller conditions through
// the real runtime and the embedded module, in one chain, the way docs/policies.md
// writes them: only admins may call db__drop_*, and the eng group sees only
// the read-only tools of server files. Alice (group eng) and Bob (group
// admins) take turns, so that an answer the host kept for one caller
// (the plugins' hints allow reuse) would show up in the other's.
func TestCallerConditionsWasm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	noDrop := spec("deny", map[string]string{"tools": "db__drop_*", "except_groups": "admins"})
	noDrop.Name = "no-drop"
	ro := spec("modes", map[string]string{"mode": "plan", "groups": "eng"})
	ro.Name, ro.Servers = "ro", []string{"files"}
	ch, err := rt.NewChain(ctx, []plugins.Spec{noDrop, ro})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close(ctx)

	for _, p := range ch.Plugins() {
		if h := p.Describe().Hints; h == nil || h.IgnoresCaller {
			t.Errorf("%s: hints %+v promise to ignore the caller, though a caller condition is set", p.Name(), h)
		}
	}

	yes := true
	ro1 := &abi.Annotations{ReadOnlyHint: &yes}
	tools := []abi.Tool{
		{Name: "files__read_file", Server: "files", Tool: "read_file", Annotations: ro1},
		{Name: "files__write_file", Server: "files", Tool: "write_file"},
		{Name: "db__query", Server: "db", Tool: "query"},
		{Name: "db__drop_table", Server: "db", Tool: "drop_table"},
	}
	alice := abi.Caller{Transport: "http", Subject: "alice", Identity: "alice", Groups: []string{"eng"}, AuthMethod: abi.AuthKey}
	bob := abi.Caller{Transport: "http", Subject: "bob", Identity: "bob", Groups: []string{"admins"}, AuthMethod: abi.AuthKey}

	list := func(c abi.Caller) string {
		got, err := ch.ToolsList(ctx, &abi.ToolsListInput{Caller: c, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range got {
			names = append(names, tl.Name)
		}
		return strings.Join(names, ",")
	}
	call := func(c abi.Caller, name string) string {
		var tl abi.Tool
		for _, x := range tools {
			if x.Name == name {
				tl = x
			}
		}
		d, err := ch.ToolCall(ctx, &abi.ToolCallInput{Caller: c, Name: name, Server: tl.Server, Tool: tl.Tool,
			Arguments: json.RawMessage(`{}`), Annotations: tl.Annotations})
		if err != nil {
			t.Fatal(err)
		}
		return d.Action
	}

	for round := 0; round < 2; round++ {
		if got, want := list(alice), "files__read_file,db__query"; got != want {
			t.Errorf("round %d: alice lists %s, want %s", round, got, want)
		}
		if got, want := list(bob), "files__read_file,files__write_file,db__query,db__drop_table"; got != want {
			t.Errorf("round %d: bob lists %s, want %s", round, got, want)
		}
		for _, tt := range []struct {
			caller abi.Caller
			tool   string
			want   string
		}{
			{alice, "db__drop_table", abi.ActionDeny},
			{bob, "db__drop_table", abi.ActionAllow},
			{alice, "files__write_file", abi.ActionDeny},
			{bob, "files__write_file", abi.ActionAllow},
			{alice, "files__read_file", abi.ActionAllow},
			{alice, "db__query", abi.ActionAllow},
		} {
			if got := call(tt.caller, tt.tool); got != tt.want {
				t.Errorf("round %d: %s calling %s: %s, want %s", round, tt.caller.Subject, tt.tool, got, tt.want)
			}
		}
	}
}

// TestCallerConditionsCompat holds the built-ins that take a caller
// condition to what the ABI asks of any plugin (plugins/compat) with one
// set: valid answers, and the promises of the hints they then make.
func TestCallerConditionsCompat(t *testing.T) {
	t.Parallel()
	configs := map[string]map[string]string{
		"allow":     {"tools": `["a__*"]`, "subjects": "alice", "except_groups": "admins"},
		"deny":      {"tools": `["*__write"]`, "groups": `["eng", "ops"]`},
		"modes":     {"mode": "plan", "except_subjects": "bob"},
		"arguments": {"defaults": `{"a__*":{"limit":5}}`, "groups": "agents"},
		"mentions":  {"allowed_servers": `{"a":["*"]}`, "except_groups": "admins"},
	}
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, r := range compat.Probe(context.Background(), rt, spec(name, cfg)) {
				if r.Err != nil {
					t.Errorf("%s: %v", r.Name, r.Err)
				}
			}
		})
	}
}

// TestChatPatternWasm runs the "per-user allowed servers" and "@-mentions
// on top" patterns of docs/policies.md as one chain: what a user sees is
// its per-user servers intersected with the client's default mentions plus
// the request's.
func TestChatPatternWasm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	named := func(name, builtin string, cfg map[string]string) plugins.Spec {
		s := spec(builtin, cfg)
		s.Name = name
		return s
	}
	ch, err := rt.NewChain(ctx, []plugins.Spec{
		named("alice-servers", "allow", map[string]string{"servers": `["files","notes","clock"]`, "subjects": "alice"}),
		named("bob-servers", "allow", map[string]string{"servers": `["clock","db"]`, "subjects": "bob, carol"}),
		named("nobody-else", "allow", map[string]string{"servers": `[]`, "except_subjects": "alice, bob, carol"}),
		named("mentions", "mentions", map[string]string{"clients": `{"chat-app":["server:clock"]}`, "except_groups": "agents"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close(ctx)
	var tools []abi.Tool
	for _, s := range []string{"files", "notes", "clock", "db"} {
		tools = append(tools, abi.Tool{Name: s + "__x", Server: s, Tool: "x"})
	}
	list := func(c abi.Caller) string {
		got, err := ch.ToolsList(ctx, &abi.ToolsListInput{Caller: c, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range got {
			names = append(names, tl.Server)
		}
		return strings.Join(names, ",")
	}
	files := json.RawMessage(`{"mentions":["server:files"]}`)
	for _, tt := range []struct {
		caller abi.Caller
		want   string
	}{
		{abi.Caller{Subject: "alice", ClientName: "chat-app"}, "clock"},
		{abi.Caller{Subject: "alice", ClientName: "chat-app", Meta: files}, "files,clock"},
		{abi.Caller{Subject: "bob", ClientName: "chat-app", Meta: files}, "clock"},
		{abi.Caller{Subject: "alice", ClientName: "other"}, "files,notes,clock"},
		{abi.Caller{Subject: "mallory", ClientName: "chat-app", Meta: files}, ""},
		{abi.Caller{ClientName: "chat-app"}, ""},
	} {
		if got := list(tt.caller); got != tt.want {
			t.Errorf("%s in %s mentioning %s sees %q, want %q", tt.caller.Subject, tt.caller.ClientName, tt.caller.Meta, got, tt.want)
		}
	}
}

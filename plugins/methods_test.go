package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
)

// The hooks of ABI 1.2 (list, request, message), run by real Wasm guests.

func listing() []abi.Item {
	item := func(server, name string) abi.Item {
		raw, _ := json.Marshal(map[string]string{"name": name})
		return abi.Item{Server: server, Name: name, Item: raw}
	}
	return []abi.Item{item("a", "a__p1"), item("b", "b__p1"), item("a", "a__p2"), item("c", "c__p1")}
}

func itemNames(items []abi.Item) string {
	s := make([]string, len(items))
	for i, it := range items {
		s[i] = it.Name
	}
	return strings.Join(s, ",")
}

// scoped returns s limited to servers.
func scoped(s Spec, servers ...string) Spec {
	s.Servers = servers
	return s
}

func TestChainList(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	hooks := "hooks"
	all := "list,request,message"
	tests := []struct {
		name   string
		method string
		specs  []Spec
		want   string
	}{
		{"empty chain", abi.MethodPromptsList, nil, "a__p1,b__p1,a__p2,c__p1"},
		{"filters compose in order", abi.MethodPromptsList, []Spec{
			policy(t, "p1", hooks, all, "drop", "a__p1"),
			policy(t, "p2", hooks, all, "mode.list", "reverse"),
		}, "c__p1,a__p2,b__p1"},
		{"a scoped plugin's output fills its servers' places", abi.MethodResourcesList, []Spec{
			scoped(policy(t, "p", hooks, all, "mode.list", "reverse"), "a"),
		}, "a__p2,b__p1,a__p1,c__p1"},
		{"a scoped plugin's drops close up", abi.MethodResourcesList, []Spec{
			scoped(policy(t, "p", hooks, all, "drop", "a__p1,c__p1"), "a"),
		}, "a__p2,b__p1,c__p1"},
		{"a method the hints leave out is not run", abi.MethodResourcesList, []Spec{
			policy(t, "p", hooks, all, "drop", "a__p1", "hints", `{"methods":{"list":["prompts/list"]}}`),
		}, "a__p1,b__p1,a__p2,c__p1"},
		{"a method the hints name is run", abi.MethodPromptsList, []Spec{
			policy(t, "p", hooks, all, "drop", "a__p1", "hints", `{"methods":{"list":["prompts/list"]}}`),
		}, "b__p1,a__p2,c__p1"},
		{"a plugin without the hook is not run", abi.MethodPromptsList, []Spec{
			policy(t, "p", hooks, "tool_call", "drop", "a__p1"),
		}, "a__p1,b__p1,a__p2,c__p1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newChain(t, rt, tt.specs...)
			got, err := c.List(context.Background(), &abi.ListInput{Method: tt.method, Items: listing()})
			if err != nil {
				t.Fatal(err)
			}
			if itemNames(got) != tt.want {
				t.Fatalf("got %s, want %s", itemNames(got), tt.want)
			}
		})
	}

	t.Run("entries keep their changes", func(t *testing.T) {
		t.Parallel()
		c := newChain(t, rt, policy(t, "p", hooks, all, "mode.list", "tag"))
		got, err := c.List(context.Background(), &abi.ListInput{Method: abi.MethodPromptsList, Items: listing()})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(got[0].Item), `"description":"p@v1 prompts/list"`) {
			t.Fatalf("item not changed: %s", got[0].Item)
		}
	})

	for _, mode := range []string{"foreign", "twice", "badjson"} {
		t.Run("invalid output fails closed: "+mode, func(t *testing.T) {
			t.Parallel()
			c := newChain(t, rt, policy(t, "p", hooks, all, "mode.list", mode))
			_, err := c.List(context.Background(), &abi.ListInput{Method: abi.MethodPromptsList, Items: listing()})
			if !errors.Is(err, ErrInvalidOutput) {
				t.Fatalf("err = %v, want ErrInvalidOutput", err)
			}
		})
		t.Run("invalid output skipped with on_error skip: "+mode, func(t *testing.T) {
			t.Parallel()
			s := policy(t, "p", hooks, all, "mode.list", mode)
			s.OnError = OnErrorSkip
			c := newChain(t, rt, s)
			got, err := c.List(context.Background(), &abi.ListInput{Method: abi.MethodPromptsList, Items: listing()})
			if err != nil || len(got) != 4 {
				t.Fatalf("got %d entries, %v; want the listing unchanged", len(got), err)
			}
		})
	}
}

func TestChainRequest(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	hooks, all := "hooks", "list,request,message"
	in := func(server, name string) *abi.RequestInput {
		return &abi.RequestInput{Method: abi.MethodResourcesRead, Server: server, Name: name, Params: json.RawMessage(`{"uri":"` + name + `"}`)}
	}
	tests := []struct {
		name  string
		specs []Spec
		in    *abi.RequestInput
		want  string // "allow" or the deny reason
	}{
		{"empty chain allows", nil, in("a", "notes://x"), "allow"},
		{"a deny names the policy", []Spec{
			policy(t, "p1", hooks, all, "mode.request", "deny-name", "name.deny", "notes://x"),
		}, in("a", "notes://x"), `policy "p1": denied resources/read notes://x by p1`},
		{"the first deny ends the chain", []Spec{
			policy(t, "p1", hooks, all, "mode.request", "deny"),
			policy(t, "p2", hooks, all, "mode.request", "error"),
		}, in("a", "notes://x"), `policy "p1": denied resources/read notes://x by p1`},
		{"another name passes", []Spec{
			policy(t, "p1", hooks, all, "mode.request", "deny-name", "name.deny", "notes://x"),
		}, in("a", "notes://y"), "allow"},
		{"a plugin scoped elsewhere is not asked", []Spec{
			scoped(policy(t, "p1", hooks, all, "mode.request", "deny"), "b"),
		}, in("a", "notes://x"), "allow"},
		{"a method the hints leave out is not asked", []Spec{
			policy(t, "p1", hooks, all, "mode.request", "deny", "hints", `{"methods":{"request":["prompts/get"]}}`),
		}, in("a", "notes://x"), "allow"},
		{"a failing plugin denies", []Spec{
			policy(t, "p1", hooks, all, "mode.request", "error"),
		}, in("a", "notes://x"), `policy "p1" failed in request: returned an error: policy error from p1`},
		{"an invalid action denies", []Spec{
			policy(t, "p1", hooks, all, "mode.request", "badaction"),
		}, in("a", "notes://x"), `policy "p1" failed in request: invalid output`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newChain(t, rt, tt.specs...)
			d, err := c.Request(context.Background(), tt.in)
			if err != nil {
				t.Fatal(err)
			}
			got := d.Action
			if d.Action == abi.ActionDeny {
				got = d.Reason
			}
			if !strings.HasPrefix(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestChainMessage(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	hooks, all := "hooks", "list,request,message"
	msg := json.RawMessage(`{"contents":[{"uri":"notes://x","text":"the secret is here"}]}`)
	in := func(m json.RawMessage) *abi.MessageInput {
		return &abi.MessageInput{Method: abi.MethodResourcesRead, Server: "a", Name: "notes://x", Message: m}
	}

	t.Run("plugins compose", func(t *testing.T) {
		t.Parallel()
		c := newChain(t, rt, policy(t, "p1", hooks, all), policy(t, "p2", hooks, all))
		got, err := c.Message(context.Background(), in(msg))
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"contents":[{"uri":"notes://x","text":"the p1@v1 is here"}]}`; string(got) != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	})
	t.Run("unchanged returns the input itself", func(t *testing.T) {
		t.Parallel()
		c := newChain(t, rt, policy(t, "p", hooks, all, "mode.message", "unchanged"))
		got, err := c.Message(context.Background(), in(msg))
		if err != nil {
			t.Fatal(err)
		}
		if &got[0] != &msg[0] {
			t.Fatal("an unchanged message is a copy")
		}
	})
	t.Run("keywords skip a message without them", func(t *testing.T) {
		t.Parallel()
		// mode error: were the plugin run, the message would fail.
		c := newChain(t, rt, policy(t, "p", hooks, all, "mode.message", "error", "hints", `{"messageKeywords":["sk-"]}`))
		if _, err := c.Message(context.Background(), in(msg)); err != nil {
			t.Fatalf("plugin run despite its keywords: %v", err)
		}
		if st := c.Status()[0]; st.Reused != 1 {
			t.Fatalf("Reused = %d, want 1", st.Reused)
		}
		for _, m := range []string{`{"text":"sk-abc"}`, `{"text":"s\u006b-abc"}`} {
			if _, err := c.Message(context.Background(), in(json.RawMessage(m))); err == nil {
				t.Fatalf("%s: plugin not run, though the message may hold a keyword", m)
			}
		}
	})
	t.Run("min bytes skip a short message", func(t *testing.T) {
		t.Parallel()
		c := newChain(t, rt, policy(t, "p", hooks, all, "mode.message", "error", "hints", `{"messageMinBytes":1000}`))
		if _, err := c.Message(context.Background(), in(msg)); err != nil {
			t.Fatalf("plugin run for a message below its minimum: %v", err)
		}
	})
	t.Run("scope and methods", func(t *testing.T) {
		t.Parallel()
		c := newChain(t, rt,
			scoped(policy(t, "p1", hooks, all, "mode.message", "error"), "b"),
			policy(t, "p2", hooks, all, "mode.message", "error", "hints", `{"methods":{"message":["prompts/get"]}}`))
		if _, err := c.Message(context.Background(), in(msg)); err != nil {
			t.Fatalf("a plugin out of scope or method ran: %v", err)
		}
	})
	for _, mode := range []string{"notobject", "both", "badjson", "error"} {
		t.Run("a failure withholds the message: "+mode, func(t *testing.T) {
			t.Parallel()
			c := newChain(t, rt, policy(t, "p", hooks, all, "mode.message", mode))
			if got, err := c.Message(context.Background(), in(msg)); err == nil {
				t.Fatalf("got %s, want an error", got)
			}
		})
	}
	t.Run("on_error skip passes the message on", func(t *testing.T) {
		t.Parallel()
		s := policy(t, "p", hooks, all, "mode.message", "error")
		s.OnError = OnErrorSkip
		c := newChain(t, rt, s)
		got, err := c.Message(context.Background(), in(msg))
		if err != nil || string(got) != string(msg) {
			t.Fatalf("got %s, %v", got, err)
		}
	})
}

func TestDescribeNewHooks(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	for _, tt := range []struct {
		name string
		kv   []string
		want string
	}{
		{"a 1.1 plugin may not name a 1.2 hook", []string{"abi", "1.1", "hooks", "list"}, `hook "list" is new in ABI 1.2`},
		{"methods only for the hooks that take them", []string{"hooks", "tool_call", "hints", `{"methods":{"tool_call":["x"]}}`}, `only list, request and message take methods`},
		{"messageMinBytes not below 0", []string{"hooks", "message", "hints", `{"messageMinBytes":-1}`}, `messageMinBytes is -1`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := rt.Load(context.Background(), policy(t, "p", tt.kv...))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
	t.Run("a 1.9 plugin's unknown hook is ignored", func(t *testing.T) {
		t.Parallel()
		p := load(t, rt, policy(t, "p", "abi", "1.9", "hooks", "message,teleport"))
		if !p.HasHook(abi.HookMessage) || p.HasHook("teleport") {
			t.Fatal("hooks not as described")
		}
	})
}

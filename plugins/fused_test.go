package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/filters"
	"github.com/mcphost-project/mcphost/filters/policies"
)

// fusedChains are chains of built-ins that load as one group each.
func fusedChains() map[string][]Spec {
	return map[string][]Spec{
		"quickstart": {
			{Name: "no-delete", Source: "builtin:deny", Config: map[string]string{"tools": `["*__drop_*"]`}},
			{Name: "titles", Source: "builtin:titles", Config: map[string]string{"overrides": `{"a__t1":"First"}`}},
			{Name: "redact", Source: "builtin:redact"},
			{Name: "truncate", Source: "builtin:truncate", Config: map[string]string{"max_chars": "300"}},
			{Name: "json-results", Source: "builtin:json_results"},
		},
		// The second and third policies deny: the chain stops at the
		// first that does, and the rest see nothing.
		"deny mid-chain": {
			{Name: "titles", Source: "builtin:titles"},
			{Name: "deny-drop", Source: "builtin:deny", Config: map[string]string{"tools": `["*__drop_*"]`}},
			{Name: "deny-b", Source: "builtin:deny", Config: map[string]string{"servers": `["b"]`}},
			{Name: "redact", Source: "builtin:redact"},
		},
		// Truncate cuts before redact masks, and a second redact with
		// patterns of its own: the same policy twice, configured apart.
		"truncate then redact twice": {
			{Name: "truncate", Source: "builtin:truncate", Config: map[string]string{"max_chars": "40"}},
			{Name: "redact", Source: "builtin:redact", Config: map[string]string{"mask": "<gone>"}},
			{Name: "redact-x", Source: "builtin:redact", Config: map[string]string{"patterns": `["x{5}"]`, "builtins": "false"}},
			{Name: "json", Source: "builtin:json_results", Config: map[string]string{"errors": "true"}},
		},
		"hinted": hintedSpecs(),
	}
}

// TestFusedDifferential runs the same listings, calls and results through
// each chain of fusedChains loaded as one group (one pool, the default)
// and as separate plugins (RuntimeOptions.SeparateBuiltins): answers,
// errors and every plugin's statistics must be equal.
func TestFusedDifferential(t *testing.T) {
	t.Parallel()
	fusedRT := newRuntime(t, RuntimeOptions{Builtin: filters.Builtin})
	sepRT := newRuntime(t, RuntimeOptions{Builtin: filters.Builtin, SeparateBuiltins: true})
	for name, specs := range fusedChains() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fused, sep := newChain(t, fusedRT, specs...), newChain(t, sepRT, specs...)
			checkGrouped(t, fused, true)
			checkGrouped(t, sep, false)
			differential(t, fused, sep)
		})
	}
}

// checkGrouped checks that c's plugins share one pool (grouped) or each
// have their own.
func checkGrouped(t *testing.T, c *Chain, grouped bool) {
	t.Helper()
	for _, p := range c.plugins {
		if (p.pool != nil) != grouped || (grouped && p.pool != c.plugins[0].pool) {
			t.Fatalf("plugin %s: pool %p (first plugin's %p), want grouped %v", p.Name(), p.pool, c.plugins[0].pool, grouped)
		}
	}
}

func differential(t *testing.T, fused, sep *Chain) {
	t.Helper()
	ctx := context.Background()
	callers := []abi.Caller{{ClientName: "one"}, {ClientName: "two", Meta: json.RawMessage(`{"mode":"plan"}`)}}
	same := func(what string, got, want any, gotErr, wantErr error) {
		t.Helper()
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("%s: error fused %v, separate %v", what, gotErr, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: fused\n%s\nseparate\n%s", what, mustMarshal(t, got), mustMarshal(t, want))
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for version := range 4 {
		tools := randomCatalog(r, 30, version)
		for _, caller := range callers {
			got, gotErr := fused.ToolsList(ctx, &abi.ToolsListInput{Caller: caller, Tools: tools})
			want, wantErr := sep.ToolsList(ctx, &abi.ToolsListInput{Caller: caller, Tools: tools})
			same("tools/list", got, want, gotErr, wantErr)
			for i := range 12 {
				tool := tools[r.IntN(len(tools))]
				call := &abi.ToolCallInput{Caller: caller, Name: tool.Name, Server: tool.Server, Tool: tool.Tool,
					Arguments: json.RawMessage(fmt.Sprintf(`{"limit":%d}`, i)), Annotations: tool.Annotations}
				gotD, gotErr := fused.ToolCall(ctx, call)
				wantD, wantErr := sep.ToolCall(ctx, call)
				same("call "+tool.Name, gotD, wantD, gotErr, wantErr)
				result := mustMarshal(t, fusedResult(r))
				res := func() *abi.ToolResultInput {
					var cp abi.CallToolResult
					if err := json.Unmarshal([]byte(result), &cp); err != nil {
						t.Fatal(err)
					}
					return &abi.ToolResultInput{Caller: caller, Name: tool.Name, Server: tool.Server, Tool: tool.Tool,
						Arguments: call.Arguments, Result: &cp}
				}
				gotR, gotErr := fused.ToolResult(ctx, res())
				wantR, wantErr := sep.ToolResult(ctx, res())
				same("result of "+tool.Name+" "+result, gotR, wantR, gotErr, wantErr)
			}
		}
	}
	// Per plugin: the same guest calls, reuses and failures, hook by hook.
	strip := func(c *Chain) []string {
		var out []string
		for _, st := range c.Status() {
			out = append(out, fmt.Sprintf("%s calls=%d reused=%d failures=%d crashes=%d", st.Name, st.Calls, st.Reused, st.Failures, st.Crashes))
		}
		for _, h := range c.HookStats() {
			out = append(out, fmt.Sprintf("%s %s calls=%d failures=%d", h.Plugin, h.Hook, h.Calls, h.Failures))
		}
		slices.Sort(out) // HookStats' order within a plugin is a map's
		return out
	}
	if got, want := strip(fused), strip(sep); !reflect.DeepEqual(got, want) {
		t.Fatalf("statistics: fused\n%s\nseparate\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// fusedResult is randomResult with long text that has a secret across
// truncate's cut and a JSON text for json_results.
func fusedResult(r *rand.Rand) *abi.CallToolResult {
	text := func(s string) []abi.Content { return []abi.Content{{Type: "text", Text: s}} }
	switch r.IntN(4) {
	case 0:
		return &abi.CallToolResult{Content: text(strings.Repeat("y", 30) + " ghp_" + strings.Repeat("e", 36) + " xxxxxxx tail")}
	case 1:
		return &abi.CallToolResult{Content: text(`{"items":[1,2,3],"xxxxx":"ghp_` + strings.Repeat("f", 36) + `"}`), IsError: r.IntN(2) == 0}
	default:
		return randomResult(r)
	}
}

// TestFusedConfigError checks that a bad configuration of one plugin of a
// group is refused as that plugin's, with the message it gets alone.
func TestFusedConfigError(t *testing.T) {
	t.Parallel()
	specs := []Spec{
		{Name: "redact", Source: "builtin:redact"},
		{Name: "truncate", Source: "builtin:truncate", Config: map[string]string{"max_chars": "-3"}},
		{Name: "json", Source: "builtin:json_results"},
	}
	ctx := context.Background()
	_, fusedErr := newRuntime(t, RuntimeOptions{Builtin: filters.Builtin}).NewChain(ctx, specs)
	_, sepErr := newRuntime(t, RuntimeOptions{Builtin: filters.Builtin, SeparateBuiltins: true}).NewChain(ctx, specs)
	var le *LoadError
	if !errors.As(fusedErr, &le) || le.Name != "truncate" {
		t.Fatalf("fused: %v, want the LoadError of truncate", fusedErr)
	}
	if fusedErr.Error() != sepErr.Error() {
		t.Fatalf("fused: %v\nseparate: %v", fusedErr, sepErr)
	}
}

// TestFusedReload checks that a reload changing one plugin of a group
// loads that plugin into a new pool while the old chain still serves and
// keeps the others with their pool, and that a reload changing nothing
// reuses every plugin.
func TestFusedReload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := newRuntime(t, RuntimeOptions{Builtin: filters.Builtin})
	specs := fusedChains()["quickstart"]
	old := newChain(t, rt, specs...)
	same, err := rt.newChain(ctx, specs, old)
	if err != nil {
		t.Fatal(err)
	}
	defer same.Close(ctx)
	for i, p := range same.plugins {
		if p != old.plugins[i] {
			t.Fatalf("unchanged reload: plugin %s was loaded again", p.Name())
		}
	}
	changed := append([]Spec(nil), specs...)
	changed[1].Config = map[string]string{"overrides": `{"a__t1":"Second"}`}
	next, err := rt.newChain(ctx, changed, old)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close(ctx)
	for i, p := range next.plugins {
		if kept := p == old.plugins[i]; kept == (i == 1) || p.pool == nil {
			t.Fatalf("plugin %s: kept %v, pool %p", p.Name(), kept, p.pool)
		}
	}
	if next.plugins[1].pool == old.plugins[1].pool {
		t.Fatal("the changed plugin joined the old pool")
	}
	// The old generation still answers, with its own configuration.
	tools := []abi.Tool{{Name: "a__t1", Server: "a", Tool: "t1"}}
	for c, want := range map[*Chain]string{old: "First", next: "Second"} {
		got, err := c.ToolsList(ctx, &abi.ToolsListInput{Tools: tools})
		if err != nil || len(got) != 1 || got[0].Title != want {
			t.Fatalf("generation %d: %+v, %v; want title %q", c.Generation(), got, err, want)
		}
	}
	old.Close(ctx)
	if got, err := next.ToolsList(ctx, &abi.ToolsListInput{Tools: tools}); err != nil || got[0].Title != "Second" {
		t.Fatalf("after the old chain closed: %+v, %v", got, err)
	}
}

// TestFusedCrash checks that an instance lost in one plugin's call (here
// to its timeout) is charged to that plugin alone, as when each had its
// own pool, and that the group's other plugins go on working. The
// plugin's timeout of a microsecond ends every call on a 2 MB result.
func TestFusedCrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	specs := []Spec{
		{Name: "titles", Source: "builtin:titles", Config: map[string]string{"overrides": `{"a__t1":"First"}`}},
		{Name: "slow-redact", Source: "builtin:redact", Timeout: time.Microsecond, OnError: OnErrorSkip},
		{Name: "deny", Source: "builtin:deny", Config: map[string]string{"tools": `["x"]`}},
	}
	state := func(c *Chain) []string {
		var out []string
		for _, st := range c.Status() {
			out = append(out, fmt.Sprintf("%s state=%s calls=%d failures=%d crashes=%d consecutive=%d", st.Name, st.State, st.Calls, st.Failures, st.Crashes, st.ConsecutiveCrashes))
		}
		return out
	}
	var want []string
	for _, separate := range []bool{true, false} {
		c := newChain(t, newRuntime(t, RuntimeOptions{Builtin: filters.Builtin, SeparateBuiltins: separate}), specs...)
		checkGrouped(t, c, !separate)
		big := strings.Repeat("ghp_"+strings.Repeat("a", 36)+" ", 50000)
		for i := range CrashLimit + 2 {
			name := fmt.Sprintf("a__t%d", i)
			in := &abi.ToolResultInput{Name: name, Server: "a", Tool: name[3:],
				Result: &abi.CallToolResult{Content: []abi.Content{{Type: "text", Text: big}}}}
			if _, err := c.ToolResult(ctx, in); err != nil {
				t.Fatalf("result %d: %v (slow-redact is skipped on error)", i, err)
			}
		}
		got, err := c.ToolsList(ctx, &abi.ToolsListInput{Tools: []abi.Tool{{Name: "a__t1", Server: "a", Tool: "t1"}, {Name: "x", Server: "a", Tool: "x"}}})
		if err != nil || len(got) != 1 || got[0].Title != "First" {
			t.Fatalf("separate %v: titles after slow-redact's crashes: %+v, %v", separate, got, err)
		}
		st := state(c)
		if !strings.Contains(st[1], "state=failed") || !strings.Contains(st[0], "crashes=0") || !strings.Contains(st[2], "crashes=0") {
			t.Fatalf("separate %v:\n%s", separate, strings.Join(st, "\n"))
		}
		if want == nil {
			want = st
		} else if !reflect.DeepEqual(st, want) {
			t.Fatalf("fused\n%s\nseparate\n%s", strings.Join(st, "\n"), strings.Join(want, "\n"))
		}
	}
}

// FuzzFusedDifferential feeds arbitrary tool names, arguments and result
// text through the quickstart chain as one group and as separate plugins:
// the group's instances read each plugin's configuration per call, so any
// input that one policy's state could leak into another's shows as a
// difference.
func FuzzFusedDifferential(f *testing.F) {
	ctx := context.Background()
	specs := fusedChains()["truncate then redact twice"]
	specs = append(specs, fusedChains()["quickstart"]...)
	for i := range specs[4:] {
		specs[4+i].Name += "-2"
	}
	chain := func(separate bool) *Chain {
		// The runtime's log goes to stderr: testLogger's f.Log may not be
		// called inside the fuzz target.
		log := hclog.New(&hclog.LoggerOptions{Output: os.Stderr, Level: hclog.Warn})
		rt := newRuntime(f, RuntimeOptions{Builtin: filters.Builtin, SeparateBuiltins: separate, Logger: log})
		c, err := rt.NewChain(ctx, specs)
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { c.Close(ctx) })
		return c
	}
	fused, sep := chain(false), chain(true)
	f.Add("a__drop_1", `{"q":1}`, "ghp_"+strings.Repeat("a", 36), false)
	f.Add("b__t2", `{}`, `{"items":[1,2],"xxxxx":"y"}`, true)
	f.Add("a__t1", `{"k":"AKIA`+strings.Repeat("B", 16)+`"}`, strings.Repeat("z", 500), false)
	f.Fuzz(func(t *testing.T, name, args, text string, isError bool) {
		server, tool, _ := strings.Cut(name, "__")
		raw := json.RawMessage(args)
		if !json.Valid(raw) {
			raw = nil
		}
		call := &abi.ToolCallInput{Name: name, Server: server, Tool: tool, Arguments: raw}
		gotD, gotErr := fused.ToolCall(ctx, call)
		wantD, wantErr := sep.ToolCall(ctx, call)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(gotD, wantD) {
			t.Fatalf("call: fused %+v, %v; separate %+v, %v", gotD, gotErr, wantD, wantErr)
		}
		res := func() *abi.ToolResultInput {
			return &abi.ToolResultInput{Name: name, Server: server, Tool: tool, Arguments: raw,
				Result: &abi.CallToolResult{Content: []abi.Content{{Type: "text", Text: text}}, IsError: isError}}
		}
		gotR, gotErr := fused.ToolResult(ctx, res())
		wantR, wantErr := sep.ToolResult(ctx, res())
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(gotR, wantR) {
			t.Fatalf("result: fused %s, %v; separate %s, %v", mustMarshal(t, gotR), gotErr, mustMarshal(t, wantR), wantErr)
		}
	})
}

// TestFusedKeys checks that the host and the built-in module agree on the
// keys of a group.
func TestFusedKeys(t *testing.T) {
	if slotKey != policies.SlotKey || poolSlot != policies.PoolSlot {
		t.Fatalf("host %q %q, guest %q %q", slotKey, poolSlot, policies.SlotKey, policies.PoolSlot)
	}
}

package astoolbudget_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/internal/testproc"
	"github.com/mcphost-project/mcphost/plugins"
	"github.com/mcphost-project/mcphost/plugins/compat"
)

// The plugin is built once per content of its sources (package.json, the
// lock file, asconfig.json, assembly/*.ts) into the user cache directory,
// with `npm ci && npm run build` in a copy of this directory, so the tree
// keeps no node_modules or build output and reruns cost nothing. npm's own
// download cache sits beside it.
var (
	buildOnce sync.Once
	builtWasm string
	buildErr  error
)

// sources are the files the build reads, relative to this directory.
func sources() ([]string, error) {
	ts, err := filepath.Glob("assembly/*")
	if err != nil {
		return nil, err
	}
	files := append([]string{"package.json", "package-lock.json", "asconfig.json"}, ts...)
	slices.Sort(files)
	return files, nil
}

// wasmPath returns the built plugin, building it on first use. It skips in
// -short mode and when npm is not on PATH.
func wasmPath(tb testing.TB) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip("skipping the AssemblyScript build (npm ci, asc) in -short mode")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		tb.Skip("npm is not on PATH: cannot build the AssemblyScript plugin (needs Node.js 20+ and npm, and the npm registry)")
	}
	buildOnce.Do(func() { builtWasm, buildErr = build(npm) })
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return builtWasm
}

func build(npm string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	root := filepath.Join(base, "mcphost-test", "as-tool-budget")
	files, err := sources()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	dir := filepath.Join(root, hex.EncodeToString(h.Sum(nil))[:16])
	out := filepath.Join(dir, "tool-budget.wasm")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	work, err := os.MkdirTemp(root, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		dst := filepath.Join(work, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return "", err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	run := func(args ...string) error {
		cmd := exec.CommandContext(ctx, npm, args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(),
			"npm_config_cache="+filepath.Join(base, "mcphost-test", "npm"),
			"npm_config_update_notifier=false",
			"npm_config_fund=false",
			"npm_config_audit=false",
		)
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("npm %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		return nil
	}
	start := time.Now()
	if err := run("ci"); err != nil {
		return "", err
	}
	installed := time.Since(start)
	if err := run("run", "build"); err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "as-tool-budget: npm ci took %v, npm run build %v\n",
		installed.Round(time.Millisecond), (time.Since(start) - installed).Round(time.Millisecond))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(work, "build", "tool-budget.wasm"), out); err != nil {
		return "", err
	}
	return out, nil
}

// newRuntime returns a real mcphost runtime, closed at the end of the test.
// An empty cacheDir means a fresh one, so compiles are measured cold.
func newRuntime(tb testing.TB, log hclog.Logger) *plugins.Runtime {
	tb.Helper()
	if log == nil {
		log = hclog.NewNullLogger()
	}
	rt, err := plugins.NewRuntime(context.Background(), plugins.RuntimeOptions{CacheDir: tb.TempDir(), Logger: log})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

func spec(tb testing.TB, config map[string]string) plugins.Spec {
	return plugins.Spec{Name: "budget", Source: wasmPath(tb), Config: config, Timeout: 5 * time.Second}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	path := wasmPath(t)
	rt := newRuntime(t, nil)
	info, err := plugins.Inspect(context.Background(), rt, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if info.ABI != "1.0" || info.Name != "tool-budget" || info.Version != "1.0.0" {
		t.Errorf("describe: abi %q name %q version %q, want 1.0 tool-budget 1.0.0", info.ABI, info.Name, info.Version)
	}
	if want := []string{abi.HookToolsList, abi.HookToolCall}; !slices.Equal(info.Hooks, want) {
		t.Errorf("hooks %q, want %q", info.Hooks, want)
	}
	if want := []string{abi.ExportDescribe, abi.ExportToolCall, abi.ExportToolsList}; !slices.Equal(info.Exports, want) {
		t.Errorf("exports %q, want %q", info.Exports, want)
	}
	t.Logf("tool-budget.wasm: %d bytes, sha256 %s, compile %v, instantiate+describe %v",
		info.Size, info.SHA256[:12], info.CompileTime.Round(time.Microsecond), info.InstantiateTime.Round(time.Microsecond))
}

// TestCompat holds the plugin, an ABI 1.0 guest in AssemblyScript, to what
// the ABI asks of every plugin (plugins/compat, which `mcphost plugin
// check` runs): valid answers to minimal inputs and to inputs full of
// fields later versions add.
func TestCompat(t *testing.T) {
	t.Parallel()
	rs := compat.Probe(context.Background(), newRuntime(t, nil), spec(t, nil))
	for _, r := range rs {
		if r.Err != nil {
			t.Errorf("%s: %v", r.Name, r.Err)
		}
	}
	if len(rs) < 4 {
		t.Errorf("only %d checks ran", len(rs))
	}
}

// TestImports checks the module imports only what ABI 1.0 allows (section
// 10.3): AssemblyScript's default abort handler would import env.abort.
func TestImports(t *testing.T) {
	t.Parallel()
	wasm, err := os.ReadFile(wasmPath(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	cm, err := r.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{}
	for _, f := range strings.Fields(`input_length input_load_u8 input_load_u64 input_offset output_set error_set
		alloc free length length_unsafe load_u8 load_u64 store_u8 store_u64 config_get var_get var_set
		log_trace log_debug log_info log_warn log_error get_log_level http_request http_status_code http_headers`) {
		allowed[f] = true
	}
	var names []string
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		if mod != "extism:host/env" || !allowed[name] {
			t.Errorf("imports %s.%s, which ABI 1.0 does not allow", mod, name)
		}
		names = append(names, name)
	}
	if len(cm.ImportedMemories()) > 0 {
		t.Error("imports a memory")
	}
	slices.Sort(names)
	t.Logf("imports: %s", strings.Join(names, " "))
}

// catalog is a tools_list input as the host writes it: a caller, unknown
// fields (which a guest must ignore), schemas, annotations and _meta (which
// must come back verbatim).
const catalog = `{"caller":{"sessionId":"7f3c9a","transport":"http","clientName":"claude-code","attributes":{"team":"x"},"_meta":{"progressToken":1}},` +
	`"tools":[` +
	`{"name":"fs__read_file","server":"fs","tool":"read_file","title":"Read file","description":"Read a file.",` +
	`"inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"a \"quoted\" } path"}},"required":["path"]},"annotations":{"readOnlyHint":true},"futureField":[1,{"a":null}]},` +
	`{"name":"fs__write_file","server":"fs","tool":"write_file","description":"Écrit un fichier 📄 sur le disque, en remplaçant son contenu s'il existe déjà.",` +
	`"inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"bytes":{"type":"integer"}}},"_meta":{"vendor/x":1.50e3}},` +
	`{"name":"db__drop_table","server":"db","tool":"drop_table","inputSchema":{"type":"object"},"annotations":{"destructiveHint":true}},` +
	`{"name":"shell__exec","server":"shell","tool":"exec","inputSchema":{"type":"object"}},` +
	`{"name":"db__query","server":"db","tool":"query","description":"Run a read-only SQL query against the reporting database.","inputSchema":{"type":"object"}}` +
	`]}`

func TestToolsList(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	ctx := context.Background()
	cfg := map[string]string{
		"hide":                  `["*__drop_*","shell__*"]`, // what HCL's hide = ["*__drop_*", "shell__*"] becomes
		"max_description_chars": "24",
	}
	out, err := plugins.RunHook(ctx, rt, spec(t, cfg), abi.HookToolsList, []byte(catalog))
	if err != nil {
		t.Fatalf("tools_list: %v\noutput: %s", err, out)
	}
	var got abi.ToolsListOutput
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	var in abi.ToolsListInput
	if err := json.Unmarshal([]byte(catalog), &in); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range got.Tools {
		names = append(names, tool.Name)
	}
	if want := []string{"fs__read_file", "fs__write_file", "db__query"}; !slices.Equal(names, want) {
		t.Fatalf("tools %q, want %q\noutput: %s", names, want, out)
	}
	byName := map[string]abi.Tool{}
	for _, tool := range in.Tools {
		byName[tool.Name] = tool
	}
	for _, tool := range got.Tools {
		orig := byName[tool.Name]
		if tool.Server != orig.Server || tool.Tool != orig.Tool || tool.Title != orig.Title {
			t.Errorf("%s: server/tool/title changed: %+v", tool.Name, tool)
		}
		for field, pair := range map[string][2]json.RawMessage{
			"inputSchema":  {orig.InputSchema, tool.InputSchema},
			"outputSchema": {orig.OutputSchema, tool.OutputSchema},
			"_meta":        {orig.Meta, tool.Meta},
		} {
			if !bytes.Equal(pair[0], pair[1]) {
				t.Errorf("%s: %s not passed through verbatim: %s, want %s", tool.Name, field, pair[1], pair[0])
			}
		}
		if (orig.Annotations == nil) != (tool.Annotations == nil) {
			t.Errorf("%s: annotations changed: %+v", tool.Name, tool.Annotations)
		}
	}
	descs := map[string]string{
		"fs__read_file":  "Read a file.",             // short enough: unchanged
		"fs__write_file": "Écrit un fichier 📄 sur …", // 23 characters, one of them outside the BMP, and the ellipsis
		"db__query":      "Run a read-only SQL que…",
	}
	for _, tool := range got.Tools {
		if tool.Description != descs[tool.Name] {
			t.Errorf("%s: description %q, want %q", tool.Name, tool.Description, descs[tool.Name])
		}
		if n := utf8.RuneCountInString(tool.Description); n > 24 {
			t.Errorf("%s: description has %d characters, over 24", tool.Name, n)
		}
	}
	if strings.Contains(string(out), "futureField") || strings.Contains(string(out), "caller") {
		t.Errorf("output carries input fields the guest does not know: %s", out)
	}

	// A single pattern may be a plain string (HCL hide = "fs__*"); no
	// max_description_chars leaves descriptions alone.
	out, err = plugins.RunHook(ctx, rt, spec(t, map[string]string{"hide": "fs__*"}), abi.HookToolsList, []byte(catalog))
	if err != nil {
		t.Fatalf("tools_list: %v\noutput: %s", err, out)
	}
	got = abi.ToolsListOutput{}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	names = names[:0]
	for _, tool := range got.Tools {
		names = append(names, tool.Name)
		if tool.Description != byName[tool.Name].Description {
			t.Errorf("%s: description %q changed", tool.Name, tool.Description)
		}
	}
	if want := []string{"db__drop_table", "shell__exec", "db__query"}; !slices.Equal(names, want) {
		t.Errorf("tools %q, want %q", names, want)
	}

	// An empty catalog stays empty: "tools" is [], never null.
	out, err = plugins.RunHook(ctx, rt, spec(t, cfg), abi.HookToolsList, []byte(`{"caller":{},"tools":[]}`))
	if err != nil || string(out) != `{"tools":[]}` {
		t.Errorf("empty tools_list: %s, %v", out, err)
	}
}

func TestToolCall(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	ctx := context.Background()
	budget := map[string]string{"max_argument_bytes": "64", "hide": `["*__drop_*","exec"]`}
	big := `{"path":"/tmp/x","content":"` + strings.Repeat("a", 100) + `"}`
	wide := `{"t":"` + strings.Repeat("é", 30) + `"}` // 37 characters, 67 bytes
	tests := []struct {
		name   string
		config map[string]string
		input  string
		action string
		reason string // a substring of the reason
	}{
		{"small arguments", budget, `{"caller":{"transport":"stdio"},"name":"fs__write_file","server":"fs","tool":"write_file","arguments":{"path":"/tmp/x","content":"hi"},"annotations":{"destructiveHint":false}}`, "allow", ""},
		{"no arguments", budget, `{"name":"fs__list","server":"fs","tool":"list"}`, "allow", ""},
		{"empty arguments", budget, `{"arguments":{},"name":"fs__list","server":"fs","tool":"list"}`, "allow", ""},
		{"oversized arguments", budget, `{"name":"fs__write_file","server":"fs","tool":"write_file","arguments":` + big + `}`, "deny",
			fmt.Sprintf("its arguments are %d bytes of JSON, over the tool-budget limit of 64 bytes (max_argument_bytes)", len(big))},
		{"bytes, not characters", budget, `{"name":"fs__write_file","server":"fs","tool":"write_file","arguments":` + wide + `}`, "deny",
			fmt.Sprintf("its arguments are %d bytes of JSON", len(wide))},
		{"exactly at the limit", budget, `{"name":"fs__write_file","server":"fs","tool":"write_file","arguments":{"c":"` + strings.Repeat("b", 64-8) + `"}}`, "allow", ""},
		{"hidden by exposed name", budget, `{"name":"db__drop_table","server":"db","tool":"drop_table","arguments":{}}`, "deny",
			`db__drop_table is hidden by the tool-budget policy (it matches "*__drop_*")`},
		{"hidden by upstream name", budget, `{"name":"run","server":"shell","tool":"exec"}`, "deny", `run is hidden by the tool-budget policy (it matches "exec")`},
		{"no limit configured", nil, `{"name":"fs__write_file","server":"fs","tool":"write_file","arguments":` + big + `}`, "allow", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := plugins.RunHook(ctx, rt, spec(t, tt.config), abi.HookToolCall, []byte(tt.input))
			if err != nil {
				t.Fatalf("tool_call: %v\noutput: %s", err, out)
			}
			var d abi.CallDecision
			if err := json.Unmarshal(out, &d); err != nil {
				t.Fatal(err)
			}
			if d.Action != tt.action || !strings.Contains(d.Reason, tt.reason) || (tt.reason == "") != (d.Reason == "") {
				t.Errorf("decision %s, want action %q with reason containing %q", out, tt.action, tt.reason)
			}
		})
	}
}

// TestBadConfig checks a bad configuration is refused when the plugin is
// loaded, with the plugin's own message.
func TestBadConfig(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	tests := []struct {
		config map[string]string
		msg    string
	}{
		{map[string]string{"max_argument_bytes": "4KB"}, `config max_argument_bytes: "4KB" is not a whole number`},
		{map[string]string{"max_argument_bytes": "-1"}, `config max_argument_bytes: "-1" is not a whole number`},
		{map[string]string{"max_description_chars": "1e3"}, `config max_description_chars: "1e3" is not a whole number`},
		{map[string]string{"hide": `["a", 2]`}, `config hide: element 1 (2) is not a string`},
		{map[string]string{"hide": `[""]`}, `config hide: element 0 is an empty pattern`},
		{map[string]string{"hide": `["a"`}, `is neither a pattern nor a JSON list of patterns`},
	}
	for _, tt := range tests {
		_, err := rt.Load(context.Background(), spec(t, tt.config))
		var le *plugins.LoadError
		var pe *plugins.PluginError
		if !errors.As(err, &le) || !errors.As(err, &pe) || !strings.Contains(pe.Message, tt.msg) {
			t.Errorf("config %v: load error %v, want a plugin error containing %q", tt.config, err, tt.msg)
		}
	}
}

// TestChain runs the plugin in a chain scoped to one server, through the
// same entry points the host's catalog and call path use.
func TestChain(t *testing.T) {
	t.Parallel()
	log, logs := captureLog()
	rt := newRuntime(t, log)
	ctx := context.Background()
	s := spec(t, map[string]string{"hide": "*__drop_*", "max_argument_bytes": "32"})
	s.Servers = []string{"db"}
	c, err := rt.NewChain(ctx, []plugins.Spec{s})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var in abi.ToolsListInput
	if err := json.Unmarshal([]byte(catalog), &in); err != nil {
		t.Fatal(err)
	}
	tools, err := c.ToolsList(ctx, &in)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	// The in-scope output takes the place of the first in-scope tool (SPEC.md 7.1).
	if want := []string{"fs__read_file", "fs__write_file", "db__query", "shell__exec"}; !slices.Equal(names, want) {
		t.Errorf("chain tools %q, want %q", names, want)
	}
	args := json.RawMessage(`{"sql":"select * from a_rather_long_table_name"}`)
	d, err := c.ToolCall(ctx, &abi.ToolCallInput{Name: "db__query", Server: "db", Tool: "query", Arguments: args})
	if err != nil || d.Action != abi.ActionDeny {
		t.Errorf("db call: %+v, %v; want deny", d, err)
	}
	d, err = c.ToolCall(ctx, &abi.ToolCallInput{Name: "fs__write_file", Server: "fs", Tool: "write_file", Arguments: args})
	if err != nil || d.Action != abi.ActionAllow {
		t.Errorf("out-of-scope call: %+v, %v; want allow", d, err)
	}
	// The denial was logged through Extism's log_info, under the plugin's name.
	if got := logs.String(); !strings.Contains(got, "budget: denied a call to db__query: 48 bytes of arguments, limit 32") {
		t.Errorf("host log lacks the plugin's message:\n%s", got)
	}
}

// TestMemoryIsReclaimed runs many large listings on one instance capped at
// the minimum memory: without AssemblyScript's garbage collector reclaiming
// each call's garbage, the instance would hit the cap and trap.
func TestMemoryIsReclaimed(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	ctx := context.Background()
	s := spec(t, map[string]string{"hide": "*_1?", "max_description_chars": "40"})
	s.Instances, s.Memory = 1, plugins.MinMemoryBytes
	p, err := rt.Load(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	input := bigCatalog(200)
	for i := range 100 { // several times the 8 MiB cap in garbage
		out, err := p.Call(ctx, abi.HookToolsList, input)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if i == 0 {
			var got abi.ToolsListOutput
			if err := json.Unmarshal(out, &got); err != nil || len(got.Tools) != 190 {
				t.Fatalf("got %d tools, want 190 (%v)", len(got.Tools), err)
			}
		}
	}
	if st := p.Status(); st.Crashes > 0 || st.Failures > 0 {
		t.Errorf("status after 100 calls: %+v", st)
	}
}

// bigCatalog is a tools_list input of n tools, about 350 bytes each, like
// the 200-tool input SPEC.md section 9 measures.
func bigCatalog(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"caller":{"sessionId":"s1","transport":"http"},"tools":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"srv__tool_%d","server":"srv","tool":"tool_%d","title":"Tool %d",`+
			`"description":"Does thing number %d to the given resource, returning a summary of what changed and why it mattered.",`+
			`"inputSchema":{"type":"object","properties":{"id":{"type":"string","description":"The resource id."},"dryRun":{"type":"boolean"}},"required":["id"]},`+
			`"annotations":{"readOnlyHint":false,"idempotentHint":true}}`, i, i, i, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// captureLog returns an Info-level logger and what it wrote.
func captureLog() (hclog.Logger, *testproc.Buffer) {
	buf := &testproc.Buffer{}
	return hclog.New(&hclog.LoggerOptions{Output: buf, Level: hclog.Info}), buf
}

// Benchmarks, through the real runtime with a warm pool of one instance.

func loadBench(b *testing.B, config map[string]string) *plugins.Plugin {
	b.Helper()
	rt := newRuntime(b, nil)
	s := spec(b, config)
	s.Instances = 1
	p, err := rt.Load(context.Background(), s)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close(context.Background()) })
	return p
}

func BenchmarkToolCall(b *testing.B) {
	p := loadBench(b, map[string]string{"max_argument_bytes": "4096", "hide": `["*__drop_*","shell__*"]`})
	input := []byte(`{"caller":{"sessionId":"s1","transport":"http"},"name":"db__query","server":"db","tool":"query","arguments":{"sql":"select * from users","limit":100},"annotations":{"readOnlyHint":true}}`)
	ctx := context.Background()
	for b.Loop() {
		if _, err := p.Call(ctx, abi.HookToolCall, input); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkToolsList200(b *testing.B) {
	p := loadBench(b, map[string]string{"hide": "*_1?", "max_description_chars": "40"})
	input := bigCatalog(200)
	b.SetBytes(int64(len(input)))
	ctx := context.Background()
	for b.Loop() {
		if _, err := p.Call(ctx, abi.HookToolsList, input); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInstantiate loads the plugin (compiled once, shared by content)
// with a pool of one: instantiation, config check and describe.
func BenchmarkInstantiate(b *testing.B) {
	rt := newRuntime(b, nil)
	ctx := context.Background()
	s := spec(b, map[string]string{"max_argument_bytes": "4096"})
	s.Instances = 1
	keep, err := rt.Load(ctx, s) // holds the compiled module
	if err != nil {
		b.Fatal(err)
	}
	defer keep.Close(ctx)
	for b.Loop() {
		p, err := rt.Load(ctx, s)
		if err != nil {
			b.Fatal(err)
		}
		p.Close(ctx)
	}
}

// BenchmarkCompile compiles the module cold (no compilation cache).
func BenchmarkCompile(b *testing.B) {
	wasm, err := os.ReadFile(wasmPath(b))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		r := wazero.NewRuntime(ctx)
		if _, err := r.CompileModule(ctx, wasm); err != nil {
			b.Fatal(err)
		}
		r.Close(ctx)
	}
}

// TestREADMECommands runs every `mcphost plugin test` command of README.md
// as the CLI runs it (plugins.RunHook with the command's hook, input file
// and config), from this directory, with the built module for FILE: the
// input files it names must ship here, and the decision it shows must be
// the one the plugin makes.
func TestREADMECommands(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t, nil)
	ran := 0
	for _, line := range strings.Split(string(readme), "\n") {
		args, ok := strings.CutPrefix(strings.TrimSpace(line), "mcphost plugin test ")
		if !ok {
			continue
		}
		ran++
		fields := strings.Fields(args)
		var hook, input string
		config := map[string]string{}
		for i := 1; i+1 < len(fields); i += 2 {
			switch fields[i] {
			case "--hook":
				hook = fields[i+1]
			case "--input":
				input = fields[i+1]
			case "--config":
				k, v, _ := strings.Cut(fields[i+1], "=")
				config[k] = v
			default:
				t.Fatalf("%s: flag %q not understood by this test", line, fields[i])
			}
		}
		in, err := os.ReadFile(input)
		if err != nil {
			t.Errorf("%s: the README's input does not ship: %v", line, err)
			continue
		}
		s := plugins.Spec{Name: "test", Source: wasmPath(t), Config: config, Timeout: 5 * time.Second}.WithDefaults()
		out, err := plugins.RunHook(context.Background(), rt, s, hook, in)
		if err != nil {
			t.Errorf("%s: %v\noutput: %s", line, err, out)
			continue
		}
		if hook != abi.HookToolCall {
			continue
		}
		var d abi.CallDecision
		if err := json.Unmarshal(out, &d); err != nil {
			t.Fatal(err)
		}
		shown, _ := json.Marshal(d.Reason)
		if !strings.Contains(string(readme), `"action": "`+d.Action+`"`) || !bytes.Contains(readme, shown) {
			t.Errorf("%s: the plugin decided %s, which the README does not show", line, out)
		}
	}
	if ran == 0 {
		t.Fatal("README.md has no `mcphost plugin test` command")
	}
}

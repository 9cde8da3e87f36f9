package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/codemode"
	"github.com/mcphost-project/mcphost/host/tokens"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// TestCodeModeSixServers measures code mode over the six-server catalog
// of issue 35 (npm's server-filesystem, server-memory and
// server-everything, run as operators run them with npx; the go-sdk's
// everything-server; the clock and notes examples): the listing, and a
// task of three steps as plain calls and as one script: list a directory
// of 20 files, make an entity of each in the memory graph, then say how
// many entities the graph holds; and the same with search exposure, the
// model finding each tool with search_tools first. What the model reads
// (the listing, each result's content) and writes (each call's name and
// arguments) is counted in bytes and in cl100k_base tokens (host/tokens).
// docs/BENCHMARKS.md records the figures. Skipped without npx, and under
// -short.
func TestCodeModeSixServers(t *testing.T) {
	if _, err := exec.LookPath("npx"); err != nil || testing.Short() {
		t.Skip("npx is not installed, or -short")
	}
	bins, err := testproc.Build(t.TempDir(), map[string]string{"clock": "../../examples/servers/clock", "notes": "../../examples/servers/notes"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := filepath.Join(dir, "files")
	os.Mkdir(files, 0o755)
	for i := range 20 {
		os.WriteFile(filepath.Join(files, fmt.Sprintf("report-%02d.txt", i)), []byte("x"), 0o644)
	}
	npx := func(name, pkg string, args ...string) upstream.ServerConfig {
		return upstream.ServerConfig{Name: name, Transport: upstream.TransportStdio, Command: "npx", Args: append([]string{"-y", pkg}, args...),
			Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory-"+name+".jsonl")}}
	}
	servers := func() []upstream.ServerConfig {
		os.Remove(filepath.Join(dir, "memory-memory.jsonl"))
		return []upstream.ServerConfig{
			npx("files", "@modelcontextprotocol/server-filesystem@2026.8.31", files),
			npx("memory", "@modelcontextprotocol/server-memory@2026.8.31"),
			npx("everything", "@modelcontextprotocol/server-everything@2026.8.31"),
			{Name: "goeverything", Transport: upstream.TransportStdio, Command: everythingBin},
			{Name: "clock", Transport: upstream.TransportStdio, Command: bins["clock"]},
			{Name: "notes", Transport: upstream.TransportStdio, Command: bins["notes"], Args: []string{"-dir", filepath.Join(dir, "notes")}},
		}
	}
	ctx := context.Background()
	// cost is what the model reads or writes: bytes and tokens.
	type cost struct{ bytes, tokens int }
	add := func(c *cost, parts ...any) {
		t.Helper()
		for _, v := range parts {
			s, ok := v.(string)
			if !ok {
				b, err := json.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				s = string(b)
			}
			n, err := tokens.Count(s)
			if err != nil {
				t.Fatal(err)
			}
			c.bytes, c.tokens = c.bytes+len(s), c.tokens+n
		}
	}
	size := func(v any) cost {
		var c cost
		add(&c, v)
		return c
	}
	call := func(cs *mcp.ClientSession, task *cost, name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v %s", name, err, res, text(t, res))
		}
		add(task, name, args, res.Content)
		return res
	}

	plain := connectHTTP(t, startHost(t, Config{Servers: servers()}, nil), nil)
	list, err := plain.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	plainList, plainTools := size(list), len(list.Tools)
	var plainTask cost
	res := call(plain, &plainTask, "files__list_directory", map[string]any{"path": files})
	var entities []any
	for _, line := range strings.Split(text(t, res), "\n") {
		if name, ok := strings.CutPrefix(line, "[FILE] "); ok {
			entities = append(entities, map[string]any{"name": name, "entityType": "file", "observations": []string{}})
		}
	}
	call(plain, &plainTask, "memory__create_entities", map[string]any{"entities": entities})
	res = call(plain, &plainTask, "memory__read_graph", map[string]any{})
	var graph struct{ Entities []any }
	json.Unmarshal([]byte(text(t, res)), &graph)
	if len(entities) != 20 || len(graph.Entities) != 20 {
		t.Fatalf("plain calls: %d files, %d entities", len(entities), len(graph.Entities))
	}

	// Search: each step's tool found first, then called by its name.
	searching := connectHTTP(t, startHost(t, Config{Servers: servers(), Tools: catalog.ToolsConfig{Exposure: catalog.ExposureSearch}}, nil), nil)
	list, err = searching.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	searchList := size(list)
	var searchTask cost
	for _, step := range []struct {
		query, tool string
		args        map[string]any
	}{
		{"list the files in a folder", "files__list_directory", map[string]any{"path": files}},
		{"add entities to the knowledge graph", "memory__create_entities", map[string]any{"entities": entities}},
		{"read the whole knowledge graph", "memory__read_graph", map[string]any{}},
	} {
		found := call(searching, &searchTask, "search_tools", map[string]any{"query": step.query, "limit": 5})
		if !strings.Contains(text(t, found), step.tool) {
			t.Fatalf("search_tools %q did not find %s:\n%s", step.query, step.tool, text(t, found))
		}
		res = call(searching, &searchTask, step.tool, step.args)
	}
	json.Unmarshal([]byte(text(t, res)), &graph)
	if len(graph.Entities) != 20 {
		t.Fatalf("with search: %d entities", len(graph.Entities))
	}

	code := connectHTTP(t, startHost(t, Config{Servers: servers(), Tools: catalog.ToolsConfig{Exposure: catalog.ExposureCode}}, nil), nil)
	list, err = code.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	codeList := size(list)
	if testing.Verbose() {
		t.Logf("run_code's description:\n%s", list.Tools[0].Description)
	}
	script := `const names = tools.files__list_directory({path: ` + fmt.Sprintf("%q", files) + `}).content.split("\n").filter((l) => l.startsWith("[FILE] ")).map((l) => l.slice(7));
tools.memory__create_entities({entities: names.map((name) => ({name, entityType: "file", observations: []}))});
return tools.memory__read_graph({}).entities.length;`
	var codeTask cost
	res = call(code, &codeTask, codemode.ToolName, map[string]any{"code": script})
	if got := text(t, res); got != "20" {
		t.Fatalf("code mode answered %s", got)
	}
	t.Logf("listing (cl100k_base tokens): plain %d bytes, %d tokens (%d tools); search %d bytes, %d tokens; code mode %d bytes, %d tokens (run_code declaring them)",
		plainList.bytes, plainList.tokens, plainTools, searchList.bytes, searchList.tokens, codeList.bytes, codeList.tokens)
	t.Logf("task: plain calls %d bytes, %d tokens in 3 round trips; search %d bytes, %d tokens in 6; code mode %d bytes, %d tokens in 1",
		plainTask.bytes, plainTask.tokens, searchTask.bytes, searchTask.tokens, codeTask.bytes, codeTask.tokens)
}

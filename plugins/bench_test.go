package plugins

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
)

// Benchmarks run real Go guests under the same engine settings as the host
// (per-instance memory caps), each in both ways of stopping guests:
// loops=instrumented (the default, internal/wasmrewrite) and loops=closeondone
// (RuntimeOptions.CloseOnContextDone, wazero's check at every loop header).

// benchModes runs f under each way of stopping guests.
func benchModes(b *testing.B, f func(b *testing.B, opts RuntimeOptions)) {
	b.Run("loops=instrumented", func(b *testing.B) { f(b, RuntimeOptions{}) })
	b.Run("loops=closeondone", func(b *testing.B) { f(b, RuntimeOptions{CloseOnContextDone: true}) })
}

func BenchmarkCallEmpty(b *testing.B) { benchModes(b, benchCallEmpty) }

func benchCallEmpty(b *testing.B, opts RuntimeOptions) {
	rt := newRuntime(b, opts)
	spec := policy(b, "noop", "mode.tool_call", "noop")
	spec.Instances = 1
	p := load(b, rt, spec)
	in := callInput(b, `{}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Call(ctx, abi.HookToolCall, in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkToolCall(b *testing.B) { benchModes(b, benchToolCall) }

func benchToolCall(b *testing.B, opts RuntimeOptions) {
	rt := newRuntime(b, opts)
	c := newBenchChain(b, rt, policy(b, "allow"))
	in := &abi.ToolCallInput{Caller: abi.Caller{SessionID: "s1", Transport: "stdio"}, Name: "github__create_issue",
		Server: "github", Tool: "create_issue", Arguments: json.RawMessage(`{"repo":"o/r","title":"bug","body":"it broke"}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		d, err := c.ToolCall(ctx, in)
		if err != nil || d.Action != abi.ActionAllow {
			b.Fatal(d, err)
		}
	}
}

func BenchmarkToolResult10KB(b *testing.B) { benchModes(b, benchToolResult10KB) }

func benchToolResult10KB(b *testing.B, opts RuntimeOptions) {
	rt := newRuntime(b, opts)
	c := newBenchChain(b, rt, policy(b, "tagger"))
	in := &abi.ToolResultInput{Name: "fs__read", Server: "fs", Tool: "read", Arguments: json.RawMessage(`{"path":"/x"}`),
		Result: &abi.CallToolResult{Content: []abi.Content{{Type: "text", Text: strings.Repeat("0123456789abcdef\n", 10240/17)}}}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		r, err := c.ToolResult(ctx, in)
		if err != nil || len(r.Content) != 2 {
			b.Fatal(r, err)
		}
	}
}

func BenchmarkToolsList(b *testing.B) {
	for _, n := range []int{200, 1000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			benchModes(b, func(b *testing.B, opts RuntimeOptions) {
				rt := newRuntime(b, opts)
				c := newBenchChain(b, rt, policy(b, "renamer", "prefix", "x_", "drop", "tool7"))
				tools := benchTools(n)
				in := &abi.ToolsListInput{Tools: tools}
				size, _ := json.Marshal(in)
				b.SetBytes(int64(len(size)))
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					out, err := c.ToolsList(ctx, in)
					if err != nil || len(out) < n-n/10-1 {
						b.Fatal(len(out), err)
					}
				}
			})
		})
	}
}

// benchTools returns n tools of about 340 bytes of JSON each, like a real
// catalog (200 tools, 68 KB).
func benchTools(n int) []abi.Tool {
	tools := make([]abi.Tool, n)
	for i := range tools {
		server := "server" + strconv.Itoa(i%7)
		tool := "tool" + strconv.Itoa(i)
		tools[i] = abi.Tool{Name: server + "__" + tool, Server: server, Tool: tool,
			Description: "Does the thing number " + strconv.Itoa(i) + " to the given target, carefully and idempotently.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"target":{"type":"string","description":"what to act on"},"force":{"type":"boolean"}},"required":["target"]}`)}
	}
	return tools
}

// BenchmarkInstance makes a warm instance (instantiate, the guest
// runtime's initialisation, describe) of the Go test guest and of the
// built-in policies' module, with guest memory in a reservation (the
// default where the platform has one) and as a Go slice copied as it grows,
// and, for a reservation, how much of its linear memory is resident.
func BenchmarkInstance(b *testing.B) {
	builtin, err := os.ReadFile("../filters/builtin.wasm")
	if err != nil {
		b.Fatal(err)
	}
	test := policy(b, "p")
	for _, interp := range []bool{false, true} {
		rt := newRuntime(b, RuntimeOptions{Interpreter: interp, Builtin: func(string) ([]byte, map[string]string, bool) {
			return builtin, map[string]string{"mcphost.builtin": "titles"}, true
		}})
		for _, g := range []struct {
			name string
			spec Spec
		}{{"guest=test", test}, {"guest=builtin", Spec{Name: "titles", Source: "builtin:titles"}}} {
			benchInstance(b, rt, "engine="+engineName(interp)+"/"+g.name, g.spec)
		}
	}
}

// engineName names RuntimeOptions.Interpreter in benchmark names.
func engineName(interpreter bool) string {
	if interpreter {
		return "interpreter"
	}
	return "compiler"
}

func benchInstance(b *testing.B, rt *Runtime, name string, spec Spec) {
	spec.Instances = 1
	p := load(b, rt, spec)
	for _, reserved := range []bool{true, false} {
		b.Run(name+"/memory="+map[bool]string{true: "reserved", false: "heap"}[reserved], func(b *testing.B) {
			defer func(was bool) { useReserve = was }(useReserve)
			useReserve = reserved
			ctx := context.Background()
			resident, measured := 0, 0
			for b.Loop() {
				in, err := p.newWarmInstance(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if buf := instanceMemory(in); reserved && buf != nil {
					if n, ok := residentBytes(buf); ok {
						resident += n
						measured++
					}
				}
				in.close()
			}
			// What a warm instance keeps: the pages of its linear
			// memory the kernel backs (a reservation's untouched
			// pages cost nothing).
			if measured > 0 {
				b.ReportMetric(float64(resident)/float64(measured)/1024, "resident-KiB/op")
			}
		})
	}
}

func BenchmarkCompile(b *testing.B) {
	wasm, err := os.ReadFile(guest(b, "policy"))
	if err != nil {
		b.Fatal(err)
	}
	src := source{wasm: wasm}
	compile := func(b *testing.B, dir string) {
		rt, err := NewRuntime(context.Background(), RuntimeOptions{CacheDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		m, err := rt.acquire(context.Background(), src.wasm, "bench")
		if err != nil {
			b.Fatal(err)
		}
		rt.release(m)
		rt.Close(context.Background())
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			dir := b.TempDir()
			b.StartTimer()
			compile(b, dir)
		}
	})
	b.Run("warm-cache", func(b *testing.B) {
		dir := b.TempDir()
		compile(b, dir)
		for b.Loop() {
			compile(b, dir)
		}
	})
}

func newBenchChain(b *testing.B, rt *Runtime, specs ...Spec) *Chain {
	b.Helper()
	for i := range specs {
		specs[i].Instances = 1
	}
	c, err := rt.NewChain(context.Background(), specs)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close(context.Background()) })
	return c
}

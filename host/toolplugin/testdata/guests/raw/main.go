//go:build wasip1

// Command raw is a test tool plugin written against the ABI directly, to
// misbehave in every way a tool can: loop, allocate without end, crash,
// answer in the wrong shape, answer 50 MB, nest its result 5,000 deep,
// break its output schema.
package main

import (
	"bytes"
	"encoding/json"
	"strings"

	extism "github.com/extism/go-pdk"
	"github.com/mcphost-project/mcphost/abi"
)

func main() {}

//go:wasmexport mcphost_describe
func describe() int32 {
	extism.OutputString(`{"abi":"1.4","name":"raw","version":"1","hooks":[]}`)
	return 0
}

var obj = json.RawMessage(`{"type":"object"}`)

//go:wasmexport mcphost_tools
func tools() int32 {
	out := abi.ToolsOutput{}
	for _, n := range []string{"loop", "alloc", "crash", "shape", "huge", "fielderr", "deep"} {
		out.Tools = append(out.Tools, abi.ToolDef{Name: n, InputSchema: obj})
	}
	out.Tools = append(out.Tools, abi.ToolDef{Name: "badout", InputSchema: obj,
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)})
	b, _ := json.Marshal(out)
	extism.Output(b)
	return 0
}

var sink [][]byte

//go:wasmexport mcphost_tool_invoke
func invoke() int32 {
	var in abi.ToolInvokeInput
	if err := json.Unmarshal(extism.Input(), &in); err != nil {
		extism.SetError(err)
		return 1
	}
	switch in.Name {
	case "loop":
		n := 0
		for {
			n++
		}
	case "alloc":
		for {
			sink = append(sink, make([]byte, 1<<20))
		}
	case "crash":
		var m map[string]int
		m["x"] = 1 // a Go runtime panic: the guest exits
	case "shape":
		extism.OutputString(`{"tools":[]}`)
	case "huge":
		extism.OutputString(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 50<<20) + `"}]}`)
	case "deep":
		extism.OutputString(`{"content":[],"structuredContent":{"a":` + strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat("}", 5001) + `}`)
	case "fielderr":
		extism.OutputString(`{"field":"path","message":"no such file"}`)
	case "badout":
		extism.Output(bytes.Clone([]byte(`{"content":[],"structuredContent":{"n":"not a number"}}`)))
	}
	return 0
}

//go:build wasip1

// Command describeonly is a test guest that exports mcphost_describe and
// nothing else, so naming a hook in its describe output is a load error.
package main

import (
	"strings"

	pdk "github.com/extism/go-pdk"
	"github.com/mcphost-project/mcphost/abi"
)

func main() {}

//go:wasmexport mcphost_describe
func describe() int32 {
	hooks := "tools_list"
	if v, ok := pdk.GetConfig("hooks"); ok {
		hooks = v
	}
	d := abi.Describe{ABI: abi.Version, Name: "describeonly", Version: "1", Hooks: strings.Split(hooks, ",")}
	if err := pdk.OutputJSON(d); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

package filters_test

import (
	"fmt"

	"github.com/mcphost-project/mcphost/filters"
)

// Builtin is what plugins.RuntimeOptions.Builtin wants: every name gives
// the same embedded module and the configuration that selects the policy.
func ExampleBuiltin() {
	wasm, config, ok := filters.Builtin("titles")
	fmt.Println(ok, len(wasm) == len(filters.Module()), config)
	_, _, ok = filters.Builtin("no-such-policy")
	fmt.Println(ok)
	fmt.Println(filters.Names())
	// Output:
	// true true map[mcphost.builtin:titles]
	// false
	// [allow arguments compact deny describe json_results mentions modes pin redact titles truncate]
}

package pdk_test

import (
	"encoding/json"
	"fmt"

	"github.com/mcphost-project/mcphost/abi/pdk"
)

// A call hook answers with one of these decisions; this is the JSON the host
// receives for each.
func ExampleDenyHidden() {
	for _, d := range []any{
		pdk.Allow(),
		pdk.Deny("writes are off on weekends"),
		pdk.DenyHidden("not for this team"),
	} {
		out, _ := json.Marshal(d)
		fmt.Println(string(out))
	}
	// Output:
	// {"action":"allow"}
	// {"action":"deny","reason":"writes are off on weekends"}
	// {"action":"deny","reason":"not for this team","hidden":true}
}

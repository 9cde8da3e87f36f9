package policies

import (
	"testing"

	"github.com/mcphost-project/mcphost/abi/pdk"
	"github.com/mcphost-project/mcphost/abi/policytest"
)

// TestGolden runs the golden cases of ../testdata natively. Package filters
// runs the same files through the real runtime and the embedded module.
// Run with -policytest.update to rewrite the expected outputs.
func TestGolden(t *testing.T) {
	t.Parallel()
	for _, name := range Names() {
		if name == "pin" {
			continue // needs a file system; see pin_test.go
		}
		t.Run(name, func(t *testing.T) {
			policytest.Run(t, func() pdk.Policy {
				p, err := New(name)
				if err != nil {
					t.Fatal(err)
				}
				return p
			}, "../testdata/"+name+"/*.txtar")
		})
	}
}

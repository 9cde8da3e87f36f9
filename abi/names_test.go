package abi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
)

func TestValidToolName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"a": true, "_": true, "A-b_9": true, "a__b": true,
		"": false, "9a": false, "-a": false, "a b": false, "a.b": false, "é": false,
		strings.Repeat("x", abi.MaxToolNameLength): true, strings.Repeat("x", abi.MaxToolNameLength+1): false,
	} {
		if got := abi.ValidToolName(name); got != want {
			t.Errorf("ValidToolName(%q) = %v", name, got)
		}
	}
}

func ExampleValidToolName() {
	for _, name := range []string{"github__create_issue", "9lives", "has space", "x-y"} {
		fmt.Println(name, abi.ValidToolName(name))
	}
	// Output:
	// github__create_issue true
	// 9lives false
	// has space false
	// x-y true
}

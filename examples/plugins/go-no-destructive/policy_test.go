package main

import (
	"testing"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/policytest"
)

// TestPolicy runs the golden cases in testdata natively: no Wasm involved.
// abi/pdk's host tests build this plugin and run it through Extism.
func TestPolicy(t *testing.T) {
	t.Parallel()
	policytest.Run(t, New, "testdata/*.txtar")
}

func TestBlocked(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	r := &rules{deny: []string{"*delete*"}, allow: []string{"tmp__*"}}
	strict := &rules{strict: true}
	tests := []struct {
		r          *rules
		name, tool string
		ro, destr  *bool
		blocked    bool
	}{
		{r, "fs__read", "read", &yes, nil, false},
		{r, "fs__rm", "rm", nil, &yes, true},
		{r, "fs__delete_file", "delete_file", &yes, &no, true}, // deny patterns win over annotations
		{r, "tmp__rm", "rm", nil, &yes, false},                 // allow exempts from the annotation rule
		{r, "tmp__delete", "delete", nil, nil, true},           // but not from deny patterns
		{r, "x__y", "delete_all", nil, nil, true},              // patterns also match the upstream name
		{r, "fs__write", "write", nil, nil, false},
		{strict, "fs__write", "write", nil, nil, true},
		{strict, "fs__write", "write", &no, nil, true},
		{strict, "fs__write", "write", nil, &no, false},
		{strict, "fs__read", "read", &yes, nil, false},
	}
	for _, tt := range tests {
		var a *annotations
		if tt.ro != nil || tt.destr != nil {
			a = &annotations{ReadOnlyHint: tt.ro, DestructiveHint: tt.destr}
		}
		got := tt.r.blocked(tt.name, tt.tool, a)
		if (got != "") != tt.blocked {
			t.Errorf("blocked(%s, ro=%v, destructive=%v) = %q, want blocked %v", tt.name, deref(tt.ro), deref(tt.destr), got, tt.blocked)
		}
	}
}

type annotations = abi.Annotations

func deref(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

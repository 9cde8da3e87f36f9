package gateway

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestFloors holds the host side to its floors (docs/ARCHITECTURE.md):
// the leaves and the upstream side never import the core or what is above
// it, the core imports neither plugins nor the assembly, and only the
// assembly imports both the core and plugins.
func TestFloors(t *testing.T) {
	const mod = "github.com/mcphost-project/mcphost/"
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", mod+"host/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		imports[strings.TrimPrefix(p.ImportPath, mod)] = p.Imports
	}
	if len(imports) == 0 {
		t.Fatal("go list found no package under host/")
	}
	assembly := map[string]bool{"host/config": true, "host/engine": true, "host/toolplugin": true, "host/admin": true, "host/console": true}
	below := []string{"host/upstream", "host/upstream/process", "host/catalog", "host/listener", "host/quota", "host/search", "host/sessionless", "host/tasks", "host/usersecrets", "host/extensions", "host/internal/wire", "host/internal/outbox", "host/internal/paramheader", "host/internal/glob"}
	imports2 := func(pkg, dep string) bool {
		for _, i := range imports[pkg] {
			if i == mod+dep || strings.HasPrefix(i, mod+dep+"/") {
				return true
			}
		}
		return false
	}
	for _, b := range below {
		if _, ok := imports[b]; !ok {
			t.Errorf("%s: no such package (update this test with the layout)", b)
		}
		for dep := range assembly {
			if imports2(b, dep) {
				t.Errorf("%s imports the assembly package %s", b, dep)
			}
		}
		if imports2(b, "host/gateway") {
			t.Errorf("%s, below the core, imports host/gateway", b)
		}
		if imports2(b, "plugins") {
			t.Errorf("%s imports plugins", b)
		}
	}
	for dep := range assembly {
		if imports2("host/gateway", dep) {
			t.Errorf("the core imports the assembly package %s", dep)
		}
	}
	if imports2("host/gateway", "plugins") {
		t.Error("the core imports plugins; it asks a Policy")
	}
	for pkg := range imports {
		if imports2(pkg, "host/gateway") && imports2(pkg, "plugins") && pkg != "host/config" && pkg != "host/engine" {
			t.Errorf("%s imports both the core and plugins, and is not the assembly", pkg)
		}
	}
}

package config_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcphost-project/mcphost/host/config"
)

// TestAdminOffLoopbackWarns: the admin API speaks plain HTTP, so an
// address other machines reach is a warning (not an error: a proxy in
// front may be the plan).
func TestAdminOffLoopbackWarns(t *testing.T) {
	t.Parallel()
	for addr, warns := range map[string]bool{
		"127.0.0.1:7701": false,
		"[::1]:7701":     false,
		"localhost:7701": false,
		"0.0.0.0:7701":   true,
		":7701":          true,
		"10.1.2.3:7701":  true,
		"[::]:7701":      true,
	} {
		src := fmt.Sprintf("listen {\n  auth_token = \"t-0123456789abcdef\"\n}\nadmin {\n  http = %q\n}\n", addr)
		_, diags := config.Parse([]byte(src), filepath.Join(t.TempDir(), "mcphost.hcl"))
		if diags.HasErrors() {
			t.Fatalf("%s: %v", addr, diags.Err())
		}
		var warned *hcl.Diagnostic
		for _, d := range diags.List {
			if d.Severity == hcl.DiagWarning && strings.Contains(d.Summary, "Admin API off loopback") {
				warned = d
			}
		}
		if (warned != nil) != warns {
			t.Errorf("%s: warned %v, want %v (%v)", addr, warned != nil, warns, diags.List)
		}
		if warned != nil && (warned.Subject == nil || warned.Subject.Start.Line != 5 || !strings.Contains(warned.Detail, "in the clear")) {
			t.Errorf("%s: warning %+v", addr, warned)
		}
	}
}

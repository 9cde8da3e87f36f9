package config_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcphost-project/mcphost/host/audit"
	"github.com/mcphost-project/mcphost/host/config"
)

func parseAudit(t *testing.T, src string) (*config.File, *config.Diagnostics, string) {
	t.Helper()
	dir := t.TempDir()
	file, diags := config.Parse([]byte(src), filepath.Join(dir, "mcphost.hcl"))
	return file, diags, dir
}

func TestAuditBlock(t *testing.T) {
	t.Parallel()
	file, diags, dir := parseAudit(t, `
store {
  sqlite = "state.db"
}
plugin "mask" {
  source = "builtin:redact"
}
audit {
  file      = "logs/audit.jsonl"
  max_size  = "1MiB"
  max_files = 3
  arguments = true
  results   = true
  listings  = true
  retention = "24h"
  max_rows  = 500
}
`)
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	want := config.Audit{File: filepath.Join(dir, "logs", "audit.jsonl"), MaxSize: 1 << 20, MaxFiles: 3,
		Arguments: true, Results: true, Listings: true, Redact: "mask", Retention: 24 * time.Hour, MaxRows: 500}
	if *file.Audit != want {
		t.Fatalf("got %+v\nwant %+v", *file.Audit, want)
	}

	// Defaults; "-" is stdout; zeros mean no bound of that kind.
	file, diags, _ = parseAudit(t, "store {}\naudit {\n  file = \"-\"\n}\n")
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	want = config.Audit{File: audit.Stdout, MaxSize: audit.DefaultMaxSize, MaxFiles: audit.DefaultMaxFiles,
		Retention: audit.DefaultRetention, MaxRows: audit.DefaultMaxRows}
	if *file.Audit != want {
		t.Fatalf("defaults: got %+v\nwant %+v", *file.Audit, want)
	}
	file, diags, _ = parseAudit(t, "store {}\naudit {\n  retention = \"0\"\n  max_rows = 0\n}\n")
	if diags.HasErrors() || file.Audit.Retention != -1 || file.Audit.MaxRows != -1 || file.Audit.File != "" {
		t.Fatalf("zeros: %+v, %v", file.Audit, diags.Err())
	}
	if !hasDiag(diags, hcl.DiagWarning, "Audit lines kept forever") {
		t.Errorf("no warning that the table grows without bound: %v", diags.List)
	}
}

func TestAuditWarnings(t *testing.T) {
	t.Parallel()
	// Results without any redact plugin: a warning naming the fix.
	_, diags, _ := parseAudit(t, "audit {\n  file = \"a.jsonl\"\n  results = true\n}\n")
	if diags.HasErrors() || !hasDiag(diags, hcl.DiagWarning, "Audit arguments and results unmasked") {
		t.Fatalf("%v", diags.List)
	}
	// Off by default: no warning.
	_, diags, _ = parseAudit(t, "audit {\n  file = \"a.jsonl\"\n}\n")
	if len(diags.List) != 0 {
		t.Fatalf("%v", diags.List)
	}
	// An admin block brings a store: the lines may go there alone.
	_, diags, _ = parseAudit(t, "listen {\n  auth_token = \"t-0123456789abcdef\"\n}\nadmin {\n  http = \"127.0.0.1:7701\"\n}\naudit {}\n")
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
}

func hasDiag(diags *config.Diagnostics, sev hcl.DiagnosticSeverity, summary string) bool {
	for _, d := range diags.List {
		if d.Severity == sev && strings.Contains(d.Summary, summary) {
			return true
		}
	}
	return false
}

package config

import (
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/codemode"
)

// TestCodeMode: tools { exposure = "code" } with its code block decodes
// to the host's config; bad values are diagnostics with their place.
func TestCodeMode(t *testing.T) {
	t.Parallel()
	file, diags := Parse([]byte(`
tools {
  exposure = "code"
  code {
    timeout    = "10s"
    memory     = "32MiB"
    max_calls  = 20
    max_output = "64KiB"
    max_running = 2
  }
}
`), "mcphost.hcl")
	if len(diags.List) > 0 {
		t.Fatal(diags.List)
	}
	want := codemode.Limits{Timeout: 10 * time.Second, Memory: 32 << 20, MaxCalls: 20, MaxOutput: 64 << 10, MaxRunning: 2}
	if file.Host.Tools.Exposure != catalog.ExposureCode || file.Host.Code != want {
		t.Fatalf("tools %+v code %+v", file.Host.Tools, file.Host.Code)
	}

	for _, c := range []struct{ src, want string }{
		{`tools { exposure = "everything" }`, `mcphost.hcl:1:20`},
		{`tools { 
  exposure = "code"
  code { memory = "1MiB" }
}`, "between 8 MiB and 1024 MiB"},
		{`tools { 
  exposure = "code"
  code { max_calls = 0 }
}`, "max_calls"},
		{`tools {
  exposure = "code"
  code { shell = true }
}`, `Unsupported argument; An argument named "shell" is not expected here.`},
		{`tools {
  code {}
  code {}
}`, "Duplicate code block"},
	} {
		_, diags := Parse([]byte(c.src), "mcphost.hcl")
		if err := diags.Err(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: diagnostics %v, want %q", c.src, err, c.want)
		}
	}
	_, diags = Parse([]byte(`tools {
  code { timeout = "5s" }
}`), "mcphost.hcl")
	if len(diags.List) != 0 {
		t.Errorf("a code block without code mode: %v", diags.List)
	}
}

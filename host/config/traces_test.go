package config

import (
	"strings"
	"testing"
)

// TestTracesBlock: the traces block, and what is wrong with a bad one.
func TestTracesBlock(t *testing.T) {
	t.Parallel()
	file, diags := Parse([]byte(`traces {
  otlp_endpoint = "http://127.0.0.1:4318"
  headers       = { "x-api-key" = "k" }
  sample_ratio  = 0.25
  service_name  = "gw"
}
`), "t.hcl")
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	if tr := file.Traces; tr == nil || tr.Endpoint != "http://127.0.0.1:4318" || tr.Headers["x-api-key"] != "k" || tr.SampleRatio != 0.25 || tr.ServiceName != "gw" {
		t.Fatalf("traces = %+v", file.Traces)
	}
	for _, tc := range []struct{ body, want string }{
		{`otlp_endpoint = "127.0.0.1:4318"`, "Invalid otlp_endpoint"},
		{`otlp_endpoint = "http://c:4318"` + "\nsample_ratio = 0", "Invalid sample_ratio"},
		{`otlp_endpoint = "http://c:4318"` + "\nsample_ratio = 1.5", "Invalid sample_ratio"},
		{`sample_ratio = 1`, "otlp_endpoint"},
	} {
		_, diags := Parse([]byte("traces {\n"+tc.body+"\n}\n"), "t.hcl")
		if !diags.HasErrors() || !strings.Contains(diags.Err().Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.body, diags.Err(), tc.want)
		}
	}
}

package engine_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/engine"
)

// quickstartChain is the quickstart's policy chain (examples/quickstart).
const quickstartChain = `
server "up" {
  command = "UPSTREAM"
  args    = ["-name", "up"]
}
plugin "no-delete" {
  source = "builtin:deny"
  config = { tools = ["up__crash"] }
}
plugin "titles" {
  source = "builtin:titles"
}
plugin "redact" {
  source = "builtin:redact"
}
plugin "truncate" {
  source = "builtin:truncate"
  config = { max_chars = 20000 }
}
plugin "json-results" {
  source = "builtin:json_results"
}
`

// BenchmarkAuditToolCallHTTP is a tools/call over streamable HTTP to a
// stdio upstream through the quickstart chain, with the engine's metrics
// on, and the audit log off and on, side by side in one process.
//
//	off          no audit block
//	file         a line per call to a file, each plugin's decision in it
//	file+store   and to an SQLite store
//	file+bodies  to a file, with arguments and results, masked by redact
func BenchmarkAuditToolCallHTTP(b *testing.B) {
	for _, c := range []struct{ name, audit string }{
		{"off", ""},
		{"file", "audit {\n  file = \"audit.jsonl\"\n}\n"},
		{"file+store", "store {\n  sqlite = \"state.db\"\n}\naudit {\n  file = \"audit.jsonl\"\n}\n"},
		{"file+bodies", "audit {\n  file = \"audit.jsonl\"\n  arguments = true\n  results = true\n}\n"},
	} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			src := strings.ReplaceAll(quickstartChain, "UPSTREAM", upstreamBin) + c.audit
			file, diags := config.Parse([]byte(src), filepath.Join(dir, "mcphost.hcl"))
			if diags.HasErrors() {
				b.Fatal(diags.Err())
			}
			e, err := engine.Start(context.Background(), file, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			srv := httptest.NewServer(e.Host().Handler())
			defer srv.Close()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(),
				&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			args := map[string]any{"text": "hello, audit"}
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "up__echo", Arguments: args})
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
			b.StopTimer()
			if a := e.Audit(); a != nil {
				if err := a.Flush(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			// The CPU this process (client and gateway, not the upstream)
			// spent per call, the audit's writers included: steadier than
			// the wall time on a busy machine.
			if cpu := cpuTime() - cpu0; cpu > 0 {
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
			}
			if a := e.Audit(); a != nil {
				st := a.Stats()
				if st.FileDropped+st.StoreDropped > 0 {
					b.Logf("dropped: %+v", st)
				}
				if fi, err := os.Stat(filepath.Join(dir, "audit.jsonl")); err == nil {
					b.ReportMetric(float64(fi.Size())/float64(st.FileWritten), "B/line")
				}
			}
		})
	}
}

package engine_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// TestMetricsForgetDroppedTools: once a real upstream drops a tool (its
// list_changed), the tool's series leave /metrics; those of its other tools
// stay.
func TestMetricsForgetDroppedTools(t *testing.T) {
	t.Parallel()
	e, _ := startAuditEngine(t, `
server "up" {
  command = "UPSTREAM"
}
`)
	srv := httptest.NewServer(e.Host().Handler())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	call := func(name, args string) {
		t.Helper()
		res, err := e.Host().CallTool(ctx, abi.Caller{}, name, []byte(args))
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
	}
	scrape := func() string {
		t.Helper()
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	listed := func(name string) bool {
		tools, err := e.Host().Tools(ctx, abi.Caller{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools {
			if tl.Name == name {
				return true
			}
		}
		return false
	}
	call("up__add_tool", `{"text":"temp"}`)
	testproc.WaitFor(t, "up__temp to be listed", 10*time.Second, func() bool { return listed("up__temp") })
	call("up__temp", `{}`)
	call("up__echo", `{"text":"x"}`)
	if m := scrape(); !strings.Contains(m, `tool="temp"`) {
		t.Fatalf("no series of temp after a call:\n%.3000s", m)
	}
	call("up__remove_tool", `{"text":"temp"}`)
	testproc.WaitFor(t, "up__temp to leave the catalog", 10*time.Second, func() bool { return !listed("up__temp") })
	m := scrape()
	if strings.Contains(m, `tool="temp"`) {
		t.Errorf("temp's series outlived the tool:\n%.3000s", m)
	}
	if !strings.Contains(m, `tool="echo"`) {
		t.Errorf("echo's series went with temp's:\n%.3000s", m)
	}
}

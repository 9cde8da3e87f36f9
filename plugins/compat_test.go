package plugins

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// TestGoPDKHelpers runs a guest written only with the official go-pdk's
// HTTP, config, var and log helpers, unchanged: it must see what it would
// on Extism's own runtime.
func TestGoPDKHelpers(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hello":
			w.Header().Set("X-Reply", "hi")
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, "hello "+r.Header.Get("X-Guest"))
		case "/echo":
			b, _ := io.ReadAll(r.Body)
			io.WriteString(w, r.Method+" "+string(b))
		case "/empty":
		}
	}))
	defer srv.Close()

	var logs testproc.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	rt := newRuntime(t, RuntimeOptions{Logger: log})
	p := load(t, rt, Spec{Name: "gopdk", Source: guest(t, "gopdk"), Timeout: 10 * time.Second, Instances: 1,
		Config:       map[string]string{"greeting": "hello", "url": srv.URL},
		AllowedHosts: []string{"127.0.0.1"}})

	type report struct {
		Config     string            `json:"config"`
		ConfigOK   bool              `json:"config_ok"`
		Missing    bool              `json:"missing_ok"`
		Calls      int               `json:"calls"`
		VarInt     int               `json:"var_int"`
		Removed    bool              `json:"removed"`
		GetStatus  uint16            `json:"get_status"`
		GetBody    string            `json:"get_body"`
		GetHeaders map[string]string `json:"get_headers"`
		PostStatus uint16            `json:"post_status"`
		PostBody   string            `json:"post_body"`
		Empty      int               `json:"empty_len"`
	}
	for call := 1; call <= 2; call++ {
		out, err := p.Call(context.Background(), abi.HookToolCall, callInput(t, `{}`))
		if err != nil {
			t.Fatalf("call %d: %v", call, err)
		}
		var r report
		if err := json.Unmarshal([]byte(decodedDecision(t, out).Result.Content[0].Text), &r); err != nil {
			t.Fatal(err)
		}
		if r.Config != "hello" || !r.ConfigOK || !r.Missing {
			t.Errorf("config: %+v", r)
		}
		if r.Calls != call || r.VarInt != 42 || !r.Removed {
			t.Errorf("vars on call %d: %+v", call, r)
		}
		if r.GetStatus != http.StatusAccepted || r.GetBody != "hello gopdk" || r.GetHeaders["x-reply"] != "hi" {
			t.Errorf("GET: %d %q %v", r.GetStatus, r.GetBody, r.GetHeaders)
		}
		if r.PostStatus != http.StatusOK || r.PostBody != "POST posted body" {
			t.Errorf("POST: %d %q", r.PostStatus, r.PostBody)
		}
		if r.Empty != 0 {
			t.Errorf("empty body: %d bytes", r.Empty)
		}
	}
	if !strings.Contains(logs.String(), "gopdk guest: calling "+srv.URL) {
		t.Errorf("pdk.Log missing:\n%s", logs.String())
	}
}

package gateway

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/audit"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// auditRecorder keeps the entries a host records.
type auditRecorder struct {
	mu      sync.Mutex
	entries []*audit.Entry
}

func (r *auditRecorder) Record(e *audit.Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, e)
}

func (r *auditRecorder) last(t *testing.T) *audit.Entry {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.entries) == 0 {
		t.Fatal("no audit entry")
	}
	return r.entries[len(r.entries)-1]
}

// TestAuditOutcomes: every way a call ends gives an entry with its
// outcome, over real upstreams, with and without an observer.
func TestAuditOutcomes(t *testing.T) {
	rec := &auditRecorder{}
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}},
		&Options{Audit: &AuditOptions{Log: rec, Arguments: true, Results: true}})
	ctx := context.Background()
	caller := abi.Caller{SessionID: "s", ClientName: "c", Subject: "sam", Groups: []string{"g"}, AuthMethod: abi.AuthKey}
	for _, c := range []struct {
		name, args, outcome string
		response            bool
	}{
		{"a__echo", `{"text":"hi"}`, CallOK, true},
		{"a__tool_error", `{"text":"no"}`, CallToolError, true},
		{"a__nothing", `{}`, CallUnknown, false},
		{"a__echo", "{\"text\":\"\xff\"}", CallInvalid, false},
	} {
		_, _ = h.CallTool(ctx, caller, c.name, json.RawMessage(c.args))
		e := rec.last(t)
		if e.Outcome != c.outcome || e.Name != c.name || e.RequestBytes != len(c.args) || (e.ResponseBytes > 0) != c.response {
			t.Errorf("%s %s: entry %+v, want outcome %s", c.name, c.args, e, c.outcome)
		}
		if c.response && (len(e.Result) != e.ResponseBytes || string(e.Arguments) != c.args) {
			t.Errorf("%s: arguments %s, result %s (%d bytes)", c.name, e.Arguments, e.Result, e.ResponseBytes)
		}
		if !reflect.DeepEqual(e.Caller, audit.Caller{Subject: "sam", Groups: []string{"g"}, Method: abi.AuthKey, Session: "s", Client: "c"}) {
			t.Errorf("caller %+v", e.Caller)
		}
		if !audit.ValidID(e.ID) || e.Time.IsZero() || e.Time.Location().String() != "UTC" {
			t.Errorf("id %q time %v", e.ID, e.Time)
		}
	}
	if e := rec.entries[0]; e.Server != "a" || e.Tool != "echo" || e.UpstreamMs <= 0 || e.Decisions != nil {
		t.Errorf("first entry %+v", e)
	}
}

func TestAuditWithoutLogIsRefused(t *testing.T) {
	if _, err := New(Config{}, &Options{Audit: &AuditOptions{}}); err == nil {
		t.Fatal("an audit without a log was accepted")
	}
}

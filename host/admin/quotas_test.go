package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/internal/pgtest"
)

// TestQuotasThroughTheAPI: quotas are listed from the file and the store,
// stored ones are added, applied, replaced and removed, config ones are
// read-only, and bad definitions are refused naming the field; every
// answer matches the OpenAPI document.
func TestQuotasThroughTheAPI(t *testing.T) {
	r := newRig(t, rigOptions{extra: `
quota "file-slots" {
  concurrent = 8
}
`})
	carol := abi.Caller{Subject: "carol", AuthMethod: abi.AuthKey, Groups: []string{"support"}}
	call := func() (string, bool) {
		t.Helper()
		res, err := r.e.Host().CallTool(context.Background(), carol, "cfg__pid", json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(interface{ MarshalJSON() ([]byte, error) }); ok {
				j, _ := tc.MarshalJSON()
				b.Write(j)
			}
		}
		return b.String(), res.IsError
	}

	a := r.do("PUT", "/v1/quotas/support-pid", map[string]any{"groups": []string{"support"}, "tools": []string{"pid"}, "calls": 1, "window": "1h"})
	if a.status != http.StatusCreated || a.header.Get("Location") != "/v1/quotas/support-pid" || a.header.Get("ETag") == "" {
		t.Fatalf("PUT: %d %s", a.status, a.raw)
	}
	etag := a.header.Get("ETag")
	if out, isErr := call(); isErr {
		t.Fatalf("first call: %s", out)
	}
	out, isErr := call()
	if !isErr || !strings.Contains(out, `quota \"support-pid\" allows 1 calls per 1h; retry in`) {
		t.Fatalf("second call: %s (isError %v), want refused by the stored quota", out, isErr)
	}

	a = r.do("GET", "/v1/quotas", nil)
	list, _ := a.body["quotas"].([]any)
	if a.status != 200 || len(list) != 2 {
		t.Fatalf("list: %d %s", a.status, a.raw)
	}
	if q := list[0].(map[string]any); q["name"] != "file-slots" || q["source"] != "config" || q["concurrent"] != 8.0 {
		t.Errorf("config quota listed as %v", q)
	}
	if q := list[1].(map[string]any); q["name"] != "support-pid" || q["source"] != "store" || q["window"] != "1h0m0s" || q["per"] != "subject" {
		t.Errorf("stored quota listed as %v", q)
	}
	if a := r.do("GET", "/v1/quotas/support-pid", nil); a.status != 200 || a.header.Get("ETag") != etag {
		t.Errorf("GET: %d %s, ETag %q want %q", a.status, a.raw, a.header.Get("ETag"), etag)
	}

	// Refused: a config quota, malformed and invalid bodies, a stale ETag.
	for _, c := range []struct {
		method, path string
		body         any
		status       int
		field        string
		hdr          []string
	}{
		{"PUT", "/v1/quotas/file-slots", map[string]any{"calls": 5}, http.StatusConflict, "", nil},
		{"DELETE", "/v1/quotas/file-slots", nil, http.StatusConflict, "", nil},
		{"PUT", "/v1/quotas/x", `{"cals": 5}`, http.StatusBadRequest, "cals", nil},
		{"PUT", "/v1/quotas/x", `{"calls": 5, "window": "1s5ms"}`, http.StatusUnprocessableEntity, "window", nil},
		{"PUT", "/v1/quotas/x", `{}`, http.StatusUnprocessableEntity, "calls", nil},
		{"PUT", "/v1/quotas/bad%20name", `{"calls": 5}`, http.StatusUnprocessableEntity, "name", nil},
		{"PUT", "/v1/quotas/support-pid", map[string]any{"calls": 5}, http.StatusPreconditionFailed, "", []string{"If-Match", `"v999999"`}},
		{"GET", "/v1/quotas/nothing", nil, http.StatusNotFound, "", nil},
	} {
		a := r.do(c.method, c.path, c.body, c.hdr...)
		if a.status != c.status {
			t.Errorf("%s %s %v: %d %s, want %d", c.method, c.path, c.body, a.status, a.raw, c.status)
			continue
		}
		if c.field != "" && !strings.Contains(string(a.raw), `"field":"`+c.field+`"`) {
			t.Errorf("%s %s %v: %s, want field %s", c.method, c.path, c.body, a.raw, c.field)
		}
	}

	// Unchanged, the quota keeps its count; changed, it starts afresh.
	if a := r.do("PUT", "/v1/quotas/support-pid", map[string]any{"groups": []string{"support"}, "tools": []string{"pid"}, "calls": 1, "window": "1h"}, "If-Match", etag); a.status != 200 {
		t.Fatalf("PUT unchanged: %d %s", a.status, a.raw)
	}
	if _, isErr := call(); !isErr {
		t.Error("a PUT of the same definition gave the window back")
	}
	if a := r.do("PUT", "/v1/quotas/support-pid", map[string]any{"groups": []string{"support"}, "tools": []string{"pid"}, "calls": 2, "window": "1h"}); a.status != 200 {
		t.Fatalf("PUT changed: %d %s", a.status, a.raw)
	}
	if out, isErr := call(); isErr {
		t.Errorf("after the quota changed: %s", out)
	}
	if a := r.do("DELETE", "/v1/quotas/support-pid", nil); a.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", a.status, a.raw)
	}
	for range 3 {
		if out, isErr := call(); isErr {
			t.Fatalf("after DELETE: %s", out)
		}
	}
	if a := r.do("DELETE", "/v1/quotas/support-pid", nil); a.status != http.StatusNotFound {
		t.Errorf("second DELETE: %d %s", a.status, a.raw)
	}
}

// TestReplicasShareQuotaWindows: two replicas on one PostgreSQL store
// count one window: calls through the first spend what the second then
// refuses.
func TestReplicasShareQuotaWindows(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	body := fmt.Sprintf("postgres = %q\nkey = %q\npoll = \"100ms\"", dsn, storeKey)
	extra := `
quota "support-window" {
  groups = ["support"]
  calls  = 2
  window = "1h"
}
`
	a := newRig(t, rigOptions{store: body, extra: extra})
	b := newRig(t, rigOptions{store: body, extra: extra})
	carol := abi.Caller{Subject: "carol", AuthMethod: abi.AuthKey, Groups: []string{"support"}}
	call := func(r *rig, tool string) string {
		t.Helper()
		res, err := r.e.Host().CallTool(context.Background(), carol, tool, json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError {
			return "ok"
		}
		j, _ := json.Marshal(res.Content)
		return string(j)
	}
	for i := range 2 {
		if got := call(a, "cfg__pid"); got != "ok" {
			t.Fatalf("call %d through a: %s", i, got)
		}
	}
	if got := call(b, "cfg__pid"); !strings.Contains(got, `quota \"support-window\" allows 2 calls per 1h`) {
		t.Errorf("through b after a spent the window: %s", got)
	}
}

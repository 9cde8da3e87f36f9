package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/decision"
	"github.com/mcphost-project/mcphost/host/admin"
	"github.com/mcphost-project/mcphost/host/audit"
	"github.com/mcphost-project/mcphost/internal/pgtest"
)

// auditPage decodes an answer of GET /v1/audit.
func auditPage(t *testing.T, a answer) ([]*audit.Entry, string) {
	t.Helper()
	var page admin.AuditPage
	if err := json.Unmarshal(a.raw, &page); err != nil {
		t.Fatalf("%v: %s", err, a.raw)
	}
	out := make([]*audit.Entry, len(page.Entries))
	for i, raw := range page.Entries {
		e, err := audit.Decode(raw)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		out[i] = e
	}
	return out, page.Next
}

// TestAuditEndpoint: calls through a real host are read back, filtered
// and paged through GET /v1/audit, on SQLite and on PostgreSQL, and every
// answer matches the OpenAPI document.
func TestAuditEndpoint(t *testing.T) {
	t.Parallel()
	stores := map[string]string{"sqlite": ""}
	if dsn := pgtest.NewDatabase(t); dsn != "" {
		stores["postgres"] = fmt.Sprintf("postgres = %q\nkey = %q", dsn, storeKey)
	}
	for name, body := range stores {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, rigOptions{store: body, extra: "audit {\n  file = \"audit.jsonl\"\n}\n"})
			ctx := context.Background()
			carol := abi.Caller{Subject: "carol", Groups: []string{"support"}, AuthMethod: abi.AuthKey, SessionID: "s-carol"}
			op := abi.Caller{Subject: "operator", Groups: []string{"admins"}, AuthMethod: abi.AuthKey}
			for i := range 3 {
				if _, err := r.e.Host().CallTool(ctx, op, "cfg__echo", json.RawMessage(fmt.Sprintf(`{"text":"hi %d"}`, i))); err != nil {
					t.Fatal(err)
				}
			}
			// support-no-echo denies carol the tool (and hides it).
			res, err := r.e.Host().CallTool(ctx, carol, "cfg__echo", json.RawMessage(`{"text":"hi"}`))
			if err != nil || !res.IsError {
				t.Fatalf("carol's call: %+v, %v", res, err)
			}
			if err := r.e.Audit().Flush(ctx); err != nil {
				t.Fatal(err)
			}

			a := r.do("GET", "/v1/audit", nil)
			want(t, a, http.StatusOK)
			entries, next := auditPage(t, a)
			if len(entries) != 4 || next != "" {
				t.Fatalf("%d entries, next %q", len(entries), next)
			}
			denied := entries[0] // newest first
			if denied.Caller.Subject != "carol" || denied.Outcome != "denied" || len(denied.Decisions) != 1 {
				t.Fatalf("newest entry %+v", denied)
			}
			if d := denied.Decisions[0]; d.Plugin != "support-no-echo" || d.Action != decision.Deny || d.Reason == "" {
				t.Fatalf("decision %+v", d)
			}

			// Filters, and pages of one through the cursor.
			a = r.do("GET", "/v1/audit?subject=operator&outcome=ok&server=cfg&tool=echo&kind=call&limit=1", nil)
			want(t, a, http.StatusOK)
			var seen []string
			for page := 0; ; page++ {
				entries, next := auditPage(t, a)
				for _, e := range entries {
					seen = append(seen, string(e.Arguments)+e.Caller.Subject)
				}
				if next == "" || page > 5 {
					break
				}
				a = r.do("GET", "/v1/audit?subject=operator&limit=1&before="+url.QueryEscape(next), nil)
				want(t, a, http.StatusOK)
			}
			if strings.Join(seen, ",") != "operator,operator,operator" {
				t.Fatalf("paged %q", seen)
			}
			since := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
			if entries, _ := auditPage(t, r.do("GET", "/v1/audit?since="+since, nil)); len(entries) != 0 {
				t.Fatalf("%d entries from the future", len(entries))
			}

			// Mistakes name the parameter.
			for _, q := range []string{"limit=0", "limit=1001", "limit=x", "since=yesterday", "until=1", "kind=tool", "before=abc", "sever=cfg", "server=a&server=b"} {
				a := r.do("GET", "/v1/audit?"+q, nil)
				want(t, a, http.StatusBadRequest)
				field := strings.SplitN(q, "=", 2)[0]
				if !strings.Contains(string(a.raw), `"field":"`+field+`"`) {
					t.Errorf("%s: %s does not name %s", q, a.raw, field)
				}
			}
			// Only admins read it.
			a = r.do("GET", "/v1/audit", nil, "Authorization", "Bearer "+userKey)
			want(t, a, http.StatusForbidden)
		})
	}
}

func TestAuditEndpointWithoutAuditLog(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	a := r.do("GET", "/v1/audit", nil)
	want(t, a, http.StatusConflict)
	if !strings.Contains(a.problem(), "audit") {
		t.Fatalf("%s", a.problem())
	}
}

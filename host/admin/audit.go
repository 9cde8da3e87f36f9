package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcphost-project/mcphost/host/audit"
	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/engine"
	"github.com/mcphost-project/mcphost/host/store"
)

// auditParams are the query parameters of GET /v1/audit.
var auditParams = []string{"limit", "before", "server", "tool", "subject", "outcome", "kind", "since", "until"}

// AuditPage is the answer of GET /v1/audit: audit lines, newest first,
// each the JSON object written to the audit file, and the cursor of the
// next (older) page, "" after the last.
type AuditPage struct {
	Entries []json.RawMessage `json:"entries"`
	Next    string            `json:"next"`
}

// listAudit is GET /v1/audit.
func (a *api) listAudit(w http.ResponseWriter, r *http.Request) {
	q, fe := auditQuery(r)
	if fe != nil {
		writeProblem(w, http.StatusBadRequest, "Invalid audit query", fe.Field+": "+fe.Detail, *fe)
		return
	}
	page, err := a.e.QueryAudit(r.Context(), q)
	switch {
	case errors.Is(err, engine.ErrNoAuditStore):
		writeProblem(w, http.StatusConflict, "No audit log", err.Error())
		return
	case errors.Is(err, store.ErrCursor):
		writeProblem(w, http.StatusBadRequest, "Invalid audit query", "before: not a cursor this API gave (use the next of a page)",
			config.FieldError{Field: "before", Detail: "not a cursor of this API"})
		return
	case err != nil:
		writeProblem(w, http.StatusServiceUnavailable, "Audit log unreadable", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, AuditPage{Entries: page.Lines, Next: page.Next})
}

// auditQuery reads the query parameters; a parameter it does not know,
// or a value it cannot use, is a field error.
func auditQuery(r *http.Request) (store.AuditQuery, *config.FieldError) {
	v := r.URL.Query()
	for name := range v {
		if !slices.Contains(auditParams, name) {
			return store.AuditQuery{}, &config.FieldError{Field: name, Detail: "unknown parameter; the parameters are " + strings.Join(auditParams, ", ")}
		}
		if len(v[name]) > 1 {
			return store.AuditQuery{}, &config.FieldError{Field: name, Detail: "given more than once"}
		}
	}
	q := store.AuditQuery{Server: v.Get("server"), Tool: v.Get("tool"), Subject: v.Get("subject"), Outcome: v.Get("outcome"),
		Kind: v.Get("kind"), Before: v.Get("before")}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > store.MaxAuditLimit {
			return q, &config.FieldError{Field: "limit", Detail: fmt.Sprintf("a whole number from 1 to %d", store.MaxAuditLimit)}
		}
		q.Limit = n
	}
	if q.Kind != "" && q.Kind != audit.KindCall && q.Kind != audit.KindListing && q.Kind != audit.KindRequest {
		return q, &config.FieldError{Field: "kind", Detail: fmt.Sprintf("%q, %q or %q", audit.KindCall, audit.KindListing, audit.KindRequest)}
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		if s := v.Get(p.name); s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return q, &config.FieldError{Field: p.name, Detail: "a time in RFC 3339, like 2026-11-25T17:00:00Z"}
			}
			*p.dst = t
		}
	}
	return q, nil
}

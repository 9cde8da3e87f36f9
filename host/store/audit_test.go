package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/host/audit"
	"github.com/mcphost-project/mcphost/host/store"
)

// auditRecords makes n records a second apart from t0, alternating
// between two servers, subjects and outcomes.
func auditRecords(t0 time.Time, n int) []audit.Record {
	recs := make([]audit.Record, n)
	for i := range recs {
		at := t0.Add(time.Duration(i) * time.Second)
		e := audit.Entry{ID: audit.NewID(at), Time: at, Server: []string{"a", "b"}[i%2], Tool: "t", Name: fmt.Sprintf("call-%d", i),
			Caller: audit.Caller{Subject: []string{"alice", "bob"}[i%2]}, Outcome: []string{"ok", "denied"}[i%2]}
		line, _ := json.Marshal(e)
		recs[i] = audit.Record{ID: e.ID, Time: at, Kind: audit.KindCall, Server: e.Server, Tool: e.Tool, Subject: e.Caller.Subject, Outcome: e.Outcome, Line: line}
	}
	return recs
}

// names returns the name of each line of a page.
func names(t *testing.T, page store.AuditPage) []string {
	t.Helper()
	out := make([]string, len(page.Lines))
	for i, l := range page.Lines {
		e, err := audit.Decode(l)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = e.Name
	}
	return out
}

func TestAuditQuery(t *testing.T) {
	t.Parallel()
	for name, o := range stores(t, nil) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := open(t, o)
			t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
			recs := auditRecords(t0, 25)
			if err := s.AppendAudit(ctx, recs[:20]); err != nil {
				t.Fatal(err)
			}
			// A batch repeating stored lines (a retried write) keeps one of each.
			if err := s.AppendAudit(ctx, recs[15:]); err != nil {
				t.Fatal(err)
			}

			// Pages of 10, newest first, until the cursor runs out.
			var all []string
			q := store.AuditQuery{Limit: 10}
			for pages := 0; ; pages++ {
				page, err := s.QueryAudit(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, names(t, page)...)
				if page.Next == "" {
					break
				}
				if pages > 5 {
					t.Fatal("the cursor never ends")
				}
				q.Before = page.Next
			}
			if len(all) != 25 || all[0] != "call-24" || all[24] != "call-0" {
				t.Fatalf("paged through %d lines %q, want call-24 down to call-0", len(all), all)
			}

			for _, c := range []struct {
				q    store.AuditQuery
				want []string
			}{
				{store.AuditQuery{Server: "a", Limit: 3}, []string{"call-24", "call-22", "call-20"}},
				{store.AuditQuery{Subject: "bob", Outcome: "denied", Limit: 2}, []string{"call-23", "call-21"}},
				{store.AuditQuery{Subject: "bob", Outcome: "ok"}, []string{}},
				{store.AuditQuery{Since: t0.Add(22 * time.Second)}, []string{"call-24", "call-23", "call-22"}},
				{store.AuditQuery{Since: t0.Add(2 * time.Second), Until: t0.Add(4 * time.Second)}, []string{"call-3", "call-2"}},
				{store.AuditQuery{Kind: audit.KindListing}, []string{}},
				{store.AuditQuery{Tool: "t", Limit: 1}, []string{"call-24"}},
			} {
				page, err := s.QueryAudit(ctx, c.q)
				if err != nil {
					t.Fatal(err)
				}
				if got := names(t, page); fmt.Sprint(got) != fmt.Sprint(c.want) {
					t.Errorf("%+v: got %q, want %q", c.q, got, c.want)
				}
			}
			if _, err := s.QueryAudit(ctx, store.AuditQuery{Before: "bogus"}); !errors.Is(err, store.ErrCursor) {
				t.Errorf("a bogus cursor: %v, want ErrCursor", err)
			}
			page, err := s.QueryAudit(ctx, store.AuditQuery{Limit: 5000})
			if err != nil || len(page.Lines) != 25 {
				t.Errorf("limit 5000: %d lines, %v", len(page.Lines), err)
			}
		})
	}
}

func TestAuditRetention(t *testing.T) {
	t.Parallel()
	for name, o := range stores(t, nil) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := open(t, o)
			t0 := time.Now().Add(-10 * 24 * time.Hour)
			old := auditRecords(t0, 5)                            // ten days old
			recent := auditRecords(time.Now().Add(-time.Hour), 8) // an hour old
			if err := s.AppendAudit(ctx, append(old, recent...)); err != nil {
				t.Fatal(err)
			}
			n, err := s.PruneAudit(ctx, time.Now().Add(-7*24*time.Hour), -1)
			if err != nil || n != 5 {
				t.Fatalf("pruned by age: %d, %v; want 5", n, err)
			}
			if n, err = s.PruneAudit(ctx, time.Time{}, 100); err != nil || n != 0 {
				t.Fatalf("keep 100 of 8: pruned %d, %v", n, err)
			}
			if n, err = s.PruneAudit(ctx, time.Time{}, 3); err != nil || n != 5 {
				t.Fatalf("keep 3 of 8: pruned %d, %v", n, err)
			}
			page, err := s.QueryAudit(ctx, store.AuditQuery{})
			if err != nil {
				t.Fatal(err)
			}
			if got := names(t, page); fmt.Sprint(got) != "[call-7 call-6 call-5]" {
				t.Fatalf("kept %q, want the 3 newest", got)
			}
			if n, err = s.PruneAudit(ctx, time.Time{}, 0); err != nil || n != 3 {
				t.Fatalf("keep 0: pruned %d, %v", n, err)
			}
		})
	}
}

// TestAuditLogToStore runs the audit log's store writer against a real
// store: lines written in batches, readable at once after Flush, and the
// retention applied as it starts.
func TestAuditLogToStore(t *testing.T) {
	t.Parallel()
	for name, o := range stores(t, nil) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := open(t, o)
			if err := s.AppendAudit(ctx, auditRecords(time.Now().Add(-30*24*time.Hour), 3)); err != nil {
				t.Fatal(err)
			}
			l, err := audit.New(audit.Options{Store: s, MaxRows: 50})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 120 {
				now := time.Now()
				l.Record(&audit.Entry{ID: audit.NewID(now), Time: now, Name: fmt.Sprint(i), Server: "a", Outcome: "ok"})
			}
			if err := l.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			page, err := s.QueryAudit(ctx, store.AuditQuery{Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			// The month-old lines went at start (retention); the 120 new
			// ones are all there until the next pruning.
			if len(page.Lines) != 120 || names(t, page)[0] != "119" {
				t.Fatalf("%d lines, newest %q", len(page.Lines), names(t, page)[:1])
			}
			if err := l.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if st := l.Stats(); st.StoreWritten != 120 || st.StoreDropped != 0 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	id := audit.NewID(time.Now())
	got, err := store.DecodeCursor(store.EncodeCursor(id))
	if err != nil || got != id {
		t.Fatalf("%q -> %q, %v", id, got, err)
	}
	for _, c := range []string{"", "x", store.EncodeCursor("nothex"), store.EncodeCursor(id + "0"), "YTEu" + id} {
		if _, err := store.DecodeCursor(c); !errors.Is(err, store.ErrCursor) {
			t.Errorf("DecodeCursor(%q) = %v, want ErrCursor", c, err)
		}
	}
}

// FuzzDecodeCursor: any string is either refused with ErrCursor or holds
// a valid ID that encodes back to the same cursor.
func FuzzDecodeCursor(f *testing.F) {
	f.Add(store.EncodeCursor(audit.NewID(time.Unix(0, 1))))
	f.Add("YTEu")
	f.Add("")
	f.Add("====")
	f.Fuzz(func(t *testing.T, c string) {
		id, err := store.DecodeCursor(c)
		if err != nil {
			if !errors.Is(err, store.ErrCursor) {
				t.Fatalf("error %v is not ErrCursor", err)
			}
			return
		}
		if !audit.ValidID(id) || store.EncodeCursor(id) != c {
			t.Fatalf("%q decoded to %q, which encodes to %q", c, id, store.EncodeCursor(id))
		}
	})
}

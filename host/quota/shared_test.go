package quota_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/host/quota"
	"github.com/mcphost-project/mcphost/host/store"
)

// windows are a store's quota windows as quota.Windows, as the engine
// wires them.
type windows struct{ s *store.Store }

func (w windows) Take(ctx context.Context, q, key string, start, expires int64, limit int) (bool, error) {
	return w.s.TakeWindow(ctx, q, key, start, expires, limit)
}

func (w windows) GiveBack(ctx context.Context, q, key string, start int64) error {
	return w.s.GiveBackWindow(ctx, q, key, start)
}

// TestSharedWindows: two limiters (two replicas) on one real store count
// one window; a refunded call is given back to the store; a refusal by
// the store leaves no local count behind; when the store fails, each
// replica's own count decides and the failure is told.
func TestSharedWindows(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{Driver: store.SQLite, DSN: filepath.Join(t.TempDir(), "q.db")})
	if err != nil {
		t.Fatal(err)
	}
	var failures []error
	onErr := func(err error) { failures = append(failures, err) }
	qs := []quota.Quota{{Name: "q", Calls: 2, Window: time.Hour}}
	a := quota.NewShared(qs, nil, windows{s}, onErr)
	b := quota.NewShared(qs, nil, windows{s}, onErr)
	now := time.Unix(1_800_000_000, 0)
	who := quota.Who{Subject: "alice", Method: "key"}

	ta, r := a.Acquire(ctx, now, who, "s", "t")
	if r != nil {
		t.Fatal(r)
	}
	if _, r := b.Acquire(ctx, now, who, "s", "t"); r != nil {
		t.Fatal(r)
	}
	_, r = b.Acquire(ctx, now.Add(time.Minute), who, "s", "t")
	if r == nil || r.Quota != "q" || r.Kind != quota.KindCalls || r.RetrySeconds() != 59*60 {
		t.Fatalf("third call, through b: %+v, want refused by the shared window", r)
	}
	ta.Refund() // a's call went no further: the store gets it back
	ta.Release()
	tb, r := b.Acquire(ctx, now, who, "s", "t")
	if r != nil {
		t.Fatalf("after a's refund: %v", r)
	}
	tb.Release()
	// With the store gone, each replica's own count decides: a's is 0
	// (its one call was refunded), so it lets two through, not three.
	s.Close()
	for i := range 2 {
		if _, r := a.Acquire(ctx, now, who, "s", "t"); r != nil {
			t.Fatalf("store down, a's call %d: %v", i, r)
		}
	}
	if _, r := a.Acquire(ctx, now, who, "s", "t"); r == nil {
		t.Error("store down, a's own count at the limit let a call through")
	}
	if len(failures) == 0 || !strings.Contains(errors.Join(failures...).Error(), "closed") {
		t.Errorf("store failures told: %v", failures)
	}
}

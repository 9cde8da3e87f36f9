package gateway

import (
	"context"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/filters"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/plugins"
)

// TestPrepareViewsBeforeSwap checks that a reload computes the listing of
// a caller that has one before the new generation serves, so the caller's
// next request runs no policy, and sees the new generation's answer.
func TestPrepareViewsBeforeSwap(t *testing.T) {
	ctx := context.Background()
	rt, err := plugins.NewRuntime(ctx, plugins.RuntimeOptions{CacheDir: t.TempDir(), Builtin: filters.Builtin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(ctx) })
	mgr, err := plugins.NewManager(rt, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mgr.Close(ctx) })
	titles := func(title string) []plugins.Spec {
		return []plugins.Spec{{Name: "titles", Source: "builtin:titles", Config: map[string]string{"overrides": `{"s__echo":"` + title + `"}`}}}
	}
	if err := mgr.Reload(ctx, titles("First")); err != nil {
		t.Fatal(err)
	}
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("s")}}, &Options{Policy: mgr})
	mgr.Attach(hostListener{h})
	caller := abi.Caller{ClientName: "prepared"}
	title := func() string {
		t.Helper()
		tools, err := h.Tools(ctx, caller)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range tools {
			if tool.Name == "s__echo" {
				return tool.Title
			}
		}
		t.Fatalf("no s__echo in %v", tools)
		return ""
	}
	if got := title(); got != "First" {
		t.Fatalf("title %q", got)
	}

	if err := mgr.Reload(ctx, titles("Second")); err != nil {
		t.Fatal(err)
	}
	calls := func() uint64 { return mgr.Status()[0].Calls }
	if n := calls(); n != 1 {
		t.Fatalf("the new titles plugin ran %d times before any request, want 1 (the prepared view)", n)
	}
	if got := title(); got != "Second" {
		t.Fatalf("title after the swap %q, want Second", got)
	}
	if n := calls(); n != 1 {
		t.Fatalf("the listing after the swap ran the plugin again (%d calls): the prepared view was not used", n)
	}
}

// hostListener tells h of a manager's swaps, as host/engine does.
type hostListener struct{ h *Host }

func (l hostListener) BeforeSwap(ctx context.Context, next *plugins.Chain) {
	l.h.PrepareViews(ctx, next)
}
func (l hostListener) Swapped()            { l.h.NotifyPolicyChanged() }
func (l hostListener) WatchReloaded(error) {}

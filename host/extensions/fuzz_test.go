package extensions

import (
	"encoding/json"
	"testing"
)

// FuzzRouteURI: a client's URI routes to at most one server, and an
// exposed URI always routes back to the server and URI it came from.
func FuzzRouteURI(f *testing.F) {
	for _, s := range []string{"ui://clock/get-time/mcp-app.html", "ui://", "ui://%zz/x", "ui://a%2F/b", "file:///x", ""} {
		f.Add("clock", s)
	}
	f.Fuzz(func(t *testing.T, server, uri string) {
		s, up, ui := RouteURI(uri)
		if ui != IsUI(uri) || (!ui && (s != "" || up != uri)) {
			t.Fatalf("RouteURI(%q) = %q, %q, %v", uri, s, up, ui)
		}
		if s != "" && ExposeURI(s, up) == "" {
			t.Fatalf("RouteURI(%q) gave a server whose URI does not expose", uri)
		}
		if server == "" {
			return
		}
		exposed := ExposeURI(server, uri)
		s, up, ui = RouteURI(exposed)
		if !IsUI(uri) {
			if exposed != uri || ui {
				t.Fatalf("ExposeURI(%q, %q) = %q for a non-ui URI", server, uri, exposed)
			}
			return
		}
		if s != server || up != uri {
			t.Fatalf("ExposeURI(%q, %q) = %q, which routes to %q, %q", server, uri, exposed, s, up)
		}
	})
}

// FuzzExposeToolMeta: any _meta an upstream sends is rewritten without
// panicking and without changing the upstream's copy.
func FuzzExposeToolMeta(f *testing.F) {
	f.Add(`{"ui":{"resourceUri":"ui://a/b"},"ui/resourceUri":"ui://a/b"}`)
	f.Add(`{"ui":"ui://x","ui/resourceUri":3}`)
	f.Fuzz(func(t *testing.T, s string) {
		var meta map[string]any
		if json.Unmarshal([]byte(s), &meta) != nil {
			return
		}
		before, _ := json.Marshal(meta)
		out := ExposeToolMeta("srv", meta)
		if after, _ := json.Marshal(meta); string(after) != string(before) {
			t.Fatalf("input changed: %s -> %s", before, after)
		}
		if ui, ok := out["ui"].(map[string]any); ok {
			if u, ok := ui["resourceUri"].(string); ok && IsUI(u) {
				if s, _, _ := RouteURI(u); s != "srv" {
					t.Fatalf("_meta.ui.resourceUri %q routes to %q", u, s)
				}
			}
		}
	})
}

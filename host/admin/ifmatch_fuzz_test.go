package admin

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzIfMatch: any If-Match header is read as a version or answered 400.
func FuzzIfMatch(f *testing.F) {
	for _, s := range []string{`"v1"`, `W/"v42"`, `*`, `"v0"`, `"v-1"`, `"v99999999999999999999"`, `v7`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		r := httptest.NewRequest("PATCH", "/v1/servers/x", nil)
		r.Header["If-Match"] = []string{h}
		w := httptest.NewRecorder()
		v, ok := ifMatch(w, r)
		switch {
		case ok && v < 0:
			t.Fatalf("%q read as version %d", h, v)
		case !ok && w.Code != http.StatusBadRequest:
			t.Fatalf("%q answered %d", h, w.Code)
		}
	})
}

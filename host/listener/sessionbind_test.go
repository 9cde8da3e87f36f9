package listener

import (
	"strings"
	"testing"
)

func FuzzEndpointSessionID(f *testing.F) {
	f.Add("event: endpoint\ndata: /sse?sessionid=ABC\n\n")
	f.Add("data: /sse?x=1&sessionid=Z&y=2\n")
	f.Add("data: nothing\n")
	f.Fuzz(func(t *testing.T, s string) {
		id := endpointSessionID([]byte(s))
		if strings.ContainsAny(id, "&#\n") {
			t.Fatalf("%q from %q", id, s)
		}
	})
}

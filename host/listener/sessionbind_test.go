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

func TestEndpoint(t *testing.T) {
	for path, want := range map[string]string{
		"/mcp": "/mcp", "/mcp/ide": "/mcp", "/sse": "/sse", "/sse/ide": "/sse",
		"/mcpx": "/mcpx", "/status": "/status", "/": "/",
	} {
		if got := Endpoint(path); got != want {
			t.Errorf("Endpoint(%q) = %q, want %q", path, got, want)
		}
	}
}

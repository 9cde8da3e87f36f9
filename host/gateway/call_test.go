package gateway

import "testing"

// TestPickPath: every combination of what decides a call's path. The
// direct path wins wherever the connection has it (an in-process tool
// server), whether or not the client takes bytes; the raw path needs all
// three of a connection, a client that takes the upstream's bytes and a
// plain upstream session.
func TestPickPath(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		hasConn, direct, takesRaw, plain bool
		want                             callPath
	}{
		{false, false, false, false, pathTyped},
		{false, false, false, true, pathTyped},
		{false, false, true, false, pathTyped},
		{false, false, true, true, pathTyped}, // no raw connection: an SSE or HTTP upstream without a tap
		{true, false, false, false, pathTyped},
		{true, false, false, true, pathTyped}, // the client does not take bytes (NoShortcuts, another protocol)
		{true, false, true, false, pathTyped}, // a 2026-07-28 upstream session: the go-sdk adds _meta
		{true, false, true, true, pathRaw},
		{true, true, false, false, pathDirect},
		{true, true, false, true, pathDirect},
		{true, true, true, false, pathDirect},
		{true, true, true, true, pathDirect},
	} {
		if got := pickPath(c.hasConn, c.direct, c.takesRaw, c.plain); got != c.want {
			t.Errorf("pickPath(conn %v, direct %v, takesRaw %v, plain %v) = %v, want %v", c.hasConn, c.direct, c.takesRaw, c.plain, got, c.want)
		}
	}
}

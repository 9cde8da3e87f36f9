//go:build race

package security

// raceEnabled: the race detector slows the test's own clients several
// times over, so tests whose premise is a client that keeps up, or a
// client's deadline, cannot hold.
const raceEnabled = true

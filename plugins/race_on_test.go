//go:build race

package plugins

// raceEnabled: the race detector slows guests and the host several times
// over, so tests that race a deadline against a guest's run cannot hold.
const raceEnabled = true

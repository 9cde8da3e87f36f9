//go:build race

package engine_test

// raceEnabled: the race detector makes guests that move tens of MB
// through host functions far slower.
const raceEnabled = true

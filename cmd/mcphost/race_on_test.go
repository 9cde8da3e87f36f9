//go:build race

package main

// raceEnabled: TestREADMECommands, whose work is in other processes,
// has nothing for the detector and is left to the plain run.
const raceEnabled = true

package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// TestJSONLogDurations: a duration in a JSON log line reads "1.5s", not
// 1500000000, through Named and With loggers too.
func TestJSONLogDurations(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log, err := (&logFlags{level: "info", format: "json"}).logger(&buf)
	if err != nil {
		t.Fatal(err)
	}
	log.Named("x").With("ready_in", 250*time.Millisecond).Info("serving", "took", 1500*time.Millisecond, "n", 3)
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("%v: %s", err, buf.Bytes())
	}
	if line["took"] != "1.5s" || line["ready_in"] != "250ms" || line["n"] != float64(3) {
		t.Errorf("line %v", line)
	}
}

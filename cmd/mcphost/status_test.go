package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/host/gateway"
)

// The reload line of status: its label is the latest reload's kind, and
// its count says which kinds failed in a row when they are not all that one.
func TestWriteReload(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		r    gateway.ReloadStatus
		want string
	}{
		{"ok", gateway.ReloadStatus{At: at, Trigger: "plugin files", OK: true},
			"last reload (plugin files): ok at 2026-11-26T01:00:00Z\n"},
		{"one kind", gateway.ReloadStatus{At: at, Trigger: "config", Error: "bad", Failures: 2, FailuresByTrigger: map[string]int{"config": 2}},
			"last reload (config): FAILED at 2026-11-26T01:00:00Z (2 in a row; the running config stays): bad\n"},
		{"mixed kinds", gateway.ReloadStatus{At: at, Trigger: "config", Error: "bad", Failures: 3, FailuresByTrigger: map[string]int{"config": 1, "plugin files": 2}},
			"last reload (config): FAILED at 2026-11-26T01:00:00Z (3 failed reloads in a row: config 1, plugin files 2; the running config stays): bad\n"},
		// An mcphost from before the split by kind: the count, without a kind.
		{"no split", gateway.ReloadStatus{At: at, Trigger: "config", Error: "bad", Failures: 3},
			"last reload (config): FAILED at 2026-11-26T01:00:00Z (3 failed reloads in a row; the running config stays): bad\n"},
	} {
		var b bytes.Buffer
		writeReload(&b, &tc.r)
		if b.String() != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, b.String(), tc.want)
		}
	}
}

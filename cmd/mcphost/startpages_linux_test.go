package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/internal/startpages"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// rssFile reads the file-backed part of a process's resident memory, in
// KiB, from /proc/PID/status.
func rssFile(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatalf("RssFile in /proc/%d/status: %q", pid, line)
			}
			return n
		}
	}
	t.Fatalf("no RssFile in /proc/%d/status", pid)
	return 0
}

// TestStartPages: once `mcphost run` serves, the binary's pages that the
// start-up mapped are unmapped, and MCPHOST_START_PAGES=keep leaves them.
// Both processes run the same binary and config; the one that released
// holds well under the other's file-backed pages once it answers (the
// release runs before the listener serves).
func TestStartPages(t *testing.T) {
	cfg := writeConfig(t, `
server "clock" {
  command = "CLOCK"
}
`)
	start := func(env string) (int, *runningMcphost) {
		t.Setenv(startpages.Env, env)
		addr := testproc.FreeAddr(t)
		m := startMcphost(t, "http://"+addr+"/healthz", 30*time.Second, "run", cfg, "--http", addr, "--no-watch", "--log-level", "debug")
		return rssFile(t, m.cmd.Process.Pid), m
	}
	kept, km := start("keep")
	released, rm := start("")
	t.Logf("file-backed RSS idle: %d KiB kept, %d KiB released", kept, released)
	if !strings.Contains(rm.logs.String(), "released the start-up's pages of the binary") {
		t.Errorf("no release in the log:\n%s", rm.logs)
	}
	if strings.Contains(km.logs.String(), "released the start-up's pages") {
		t.Errorf("released with %s=keep:\n%s", startpages.Env, km.logs)
	}
	if released > kept*3/4 {
		t.Errorf("file-backed RSS %d KiB after release, %d KiB kept: want under three quarters", released, kept)
	}
}

package main

import (
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// runningMcphost is an `mcphost` process a test started.
type runningMcphost struct {
	cmd    *exec.Cmd
	logs   *testproc.Buffer // its stderr
	exited chan struct{}
	err    error // what Wait returned; read once exited is closed
}

// startMcphost starts `mcphost ARGS...`, stops it when the test ends if it
// still runs (SIGTERM, then SIGKILL 15 s later), and waits up to wait for GET ready to answer 200; the test
// fails at once, with the log, if mcphost ends first.
func startMcphost(t *testing.T, ready string, wait time.Duration, args ...string) *runningMcphost {
	t.Helper()
	m := &runningMcphost{cmd: exec.Command(mcphostBin, args...), logs: &testproc.Buffer{}, exited: make(chan struct{})}
	m.cmd.Stderr = m.logs
	m.cmd.WaitDelay = 5 * time.Second // an upstream left holding stderr does not hold Wait
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { m.err = m.cmd.Wait(); close(m.exited) }()
	t.Cleanup(func() { m.stop(syscall.SIGTERM, 15*time.Second) })
	testproc.WaitFor(t, ready+" to answer", wait, func() bool {
		if !m.running() {
			t.Fatalf("mcphost ended before %s answered: %v\n%s", ready, m.err, m.logs)
		}
		resp, err := http.Get(ready)
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	})
	return m
}

func (m *runningMcphost) running() bool {
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// stop sends sig and waits up to grace for the process to end, then kills
// it; it reports whether the process ended on its own.
func (m *runningMcphost) stop(sig os.Signal, grace time.Duration) bool {
	if !m.running() {
		return true
	}
	m.cmd.Process.Signal(sig)
	select {
	case <-m.exited:
		return true
	case <-time.After(grace):
		m.cmd.Process.Kill()
		<-m.exited
		return false
	}
}

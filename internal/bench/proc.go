package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Process is a server started for a measurement, in its own process group
// so that Stop ends it and every child it started, and nothing else.
type Process struct {
	Name    string
	Cmd     *exec.Cmd
	Started time.Time

	mu    sync.Mutex
	lines []string // stderr and stdout, most recent last, bounded
	watch []lineWatch
	done  chan struct{}
	err   error
}

type lineWatch struct {
	match func(string) bool
	ch    chan Line
}

// Line is a line of a process's output and when it was read.
type Line struct {
	Text string
	At   time.Time
}

// StartProcess starts name with args; dir and env (added to the
// environment) may be empty. Output is kept for Tail and WaitLine.
func StartProcess(name string, args []string, dir string, env []string) (*Process, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = groupAttr() // its own process group, where there are (proc_*.go)
	// One pipe for stdout and stderr, so lines keep their order.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr, cmd.Stdout = pw, pw
	p := &Process{Name: name, Cmd: cmd, done: make(chan struct{})}
	p.Started = time.Now()
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, fmt.Errorf("bench: starting %s: %w", name, err)
	}
	pw.Close()
	go p.read(pr)
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *Process) read(r io.ReadCloser) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		now := time.Now()
		p.mu.Lock()
		p.lines = append(p.lines, line)
		if len(p.lines) > 200 {
			p.lines = p.lines[len(p.lines)-100:]
		}
		keep := p.watch[:0]
		for _, w := range p.watch {
			if w.match(line) {
				w.ch <- Line{Text: line, At: now}
				close(w.ch)
			} else {
				keep = append(keep, w)
			}
		}
		p.watch = keep
		p.mu.Unlock()
	}
}

// PID is the process id.
func (p *Process) PID() int { return p.Cmd.Process.Pid }

// Tail returns the last n lines of output.
func (p *Process) Tail(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	lines := p.lines
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// WaitLine waits for an output line, written after the call, for which
// match is true, and returns when it was read.
func (p *Process) WaitLine(ctx context.Context, timeout time.Duration, match func(string) bool) (time.Time, error) {
	l, err := p.Watch(match).Wait(ctx, timeout)
	return l.At, err
}

// LineWatch is a wait for a line of output, registered by Watch.
type LineWatch struct {
	p  *Process
	ch chan Line
}

// Watch starts looking for an output line for which match is true, from
// now on: a line written before Wait is called is caught too. Use it to
// look for what a signal or request the caller is about to send will make
// the process write.
func (p *Process) Watch(match func(string) bool) *LineWatch {
	ch := make(chan Line, 1)
	p.mu.Lock()
	p.watch = append(p.watch, lineWatch{match: match, ch: ch})
	p.mu.Unlock()
	return &LineWatch{p: p, ch: ch}
}

// Wait returns the first line matched since Watch, waiting for it at most
// timeout. Either way, the watch ends.
func (lw *LineWatch) Wait(ctx context.Context, timeout time.Duration) (Line, error) {
	p := lw.p
	defer func() {
		p.mu.Lock()
		p.watch = slices.DeleteFunc(p.watch, func(w lineWatch) bool { return w.ch == lw.ch })
		p.mu.Unlock()
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case l := <-lw.ch:
		return l, nil
	case <-p.done:
		select {
		case l := <-lw.ch: // read just before the end
			return l, nil
		default:
		}
		return Line{}, fmt.Errorf("bench: %s exited (%v) before writing the line awaited:\n%s", p.Name, p.err, p.Tail(20))
	case <-t.C:
		return Line{}, fmt.Errorf("bench: %s did not write the line awaited within %s:\n%s", p.Name, timeout, p.Tail(20))
	case <-ctx.Done():
		return Line{}, ctx.Err()
	}
}

// WaitHTTP polls url until it answers (any status) and returns when it
// first did.
func (p *Process) WaitHTTP(ctx context.Context, timeout time.Duration, url string) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return time.Time{}, err
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			return time.Now(), nil
		}
		select {
		case <-p.done:
			return time.Time{}, fmt.Errorf("bench: %s exited (%v) before it answered at %s:\n%s", p.Name, p.err, url, p.Tail(20))
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("bench: %s did not answer at %s within %s:\n%s", p.Name, url, timeout, p.Tail(20))
		}
	}
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM to the process group, then SIGKILL after grace, and
// waits for the process to end.
func (p *Process) Stop(grace time.Duration) error {
	if p.Exited() {
		return nil
	}
	pgid := p.Cmd.Process.Pid
	signalGroup(pgid, false)
	select {
	case <-p.done:
	case <-time.After(grace):
		signalGroup(pgid, true)
		<-p.done
	}
	// Children that ignored SIGTERM but outlived the leader.
	signalGroup(pgid, true)
	return nil
}

// RSS returns the resident set size of pid in bytes, from
// /proc/PID/status VmRSS.
func RSS(pid int) (int64, error) {
	return procStatusKB(pid, "VmRSS:")
}

// RSSParts returns the two parts of pid's resident set that matter here:
// anonymous memory (RssAnon: heaps, stacks, guest memories, compiled guest
// code), the process's own; and file-backed pages (RssFile: the binary's
// text and data, mapped from the page cache, which every process running
// the same binary shares).
func RSSParts(pid int) (anon, file int64, err error) {
	if anon, err = procStatusKB(pid, "RssAnon:"); err != nil {
		return 0, 0, err
	}
	file, err = procStatusKB(pid, "RssFile:")
	return anon, file, err
}

// PeakRSS returns the high-water mark of pid's resident set (VmHWM).
func PeakRSS(pid int) (int64, error) {
	return procStatusKB(pid, "VmHWM:")
}

func procStatusKB(pid int, field string) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, err
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("bench: no %s in /proc/%d/status", field, pid)
}

// FreePort returns a loopback address with a port that was free a moment
// ago.
func FreePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// ErrSkipped marks a target that could not be set up here; the comparison
// reports it and goes on.
var ErrSkipped = errors.New("skipped")

// clockTick is the unit of utime and stime in /proc/PID/stat: USER_HZ,
// which is 100 on every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// CPUTime returns the user plus system CPU time pid has used, all its
// threads included, from /proc/PID/stat (10 ms resolution).
func CPUTime(pid int) (time.Duration, error) {
	st, err := readStat(pid)
	if err != nil {
		return 0, err
	}
	return st.cpu, nil
}

// TreeCPUTime returns the CPU time used by pid and every live process
// descended from it: a gateway and the upstream servers it started, even
// those it put in process groups of their own.
func TreeCPUTime(pid int) (time.Duration, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	stats := map[int]procStat{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readStat(p); err == nil {
			stats[p] = st
		}
	}
	if _, ok := stats[pid]; !ok {
		return 0, fmt.Errorf("bench: no process %d", pid)
	}
	var sum time.Duration
	for p, st := range stats {
		// Walk up to pid or to the root; /proc is read once, so the walk
		// ends even if a parent link is stale.
		for q, n := p, 0; n < 64; n++ {
			if q == pid {
				sum += st.cpu
				break
			}
			parent, ok := stats[q]
			if !ok || parent.ppid == q || parent.ppid == 0 {
				break
			}
			q = parent.ppid
		}
	}
	return sum, nil
}

type procStat struct {
	ppid int
	cpu  time.Duration
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	// The command name is in parentheses and may hold spaces: fields are
	// counted from the last ')'. After it: state ppid pgrp ..., with utime
	// and stime the 14th and 15th fields of the line.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("bench: cannot parse /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return procStat{}, fmt.Errorf("bench: cannot parse /proc/%d/stat", pid)
	}
	ppid, err1 := strconv.Atoi(f[1])
	utime, err2 := strconv.ParseInt(f[11], 10, 64)
	stime, err3 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return procStat{}, fmt.Errorf("bench: /proc/%d/stat: %w", pid, err)
	}
	return procStat{ppid: ppid, cpu: time.Duration(utime+stime) * clockTick}, nil
}

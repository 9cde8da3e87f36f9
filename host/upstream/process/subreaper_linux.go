package process

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Subreaper is this process acting as a child subreaper (Linux's
// PR_SET_CHILD_SUBREAPER): a descendant of an upstream whose parent exits
// is reparented to mcphost instead of to init, so that mcphost can still
// find it, reap it when it exits, and end it at shutdown. It is a property
// of the whole process: only a program's main should ask for it, once.
type Subreaper struct {
	stop chan struct{}
	done chan struct{}
}

// Children records the processes the host started itself (upstream
// servers), which the go-sdk waits for: the subreaper reaps every other
// child that exits, and must never reap these.
var Children childSet

type childSet struct {
	mu  sync.RWMutex // held for reading across a start, for writing while reaping
	own map[int]bool
}

// Starting marks a process start; the returned func records its pid (0:
// it failed) and ends it.
func (c *childSet) Starting() func(pid int) {
	c.mu.RLock()
	return func(pid int) {
		c.mu.RUnlock()
		if pid > 0 {
			c.mu.Lock()
			if c.own == nil {
				c.own = make(map[int]bool)
			}
			c.own[pid] = true
			c.mu.Unlock()
		}
	}
}

// Exited forgets a server once the go-sdk has waited for it.
func (c *childSet) Exited(pid int) {
	c.mu.Lock()
	delete(c.own, pid)
	c.mu.Unlock()
}

// BecomeSubreaper makes this process a child subreaper and starts reaping
// the orphans that exit under it. Call Close at shutdown, after the host is
// closed: it ends every orphan still running. It also ends what upstreams
// of an earlier mcphost left running when that mcphost was killed (their
// processes carry its tag, and it is gone).
func BecomeSubreaper() (*Subreaper, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("host: becoming a child subreaper: %w", err)
	}
	killAbandoned(Grace / 2)
	killAbandonedCgroups(Grace / 2)
	s := &Subreaper{stop: make(chan struct{}), done: make(chan struct{})}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGCHLD)
	go func() {
		defer close(s.done)
		defer signal.Stop(sig)
		tick := time.NewTicker(5 * time.Second) // in case a SIGCHLD was coalesced away
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-sig:
			case <-tick.C:
			}
			reapOrphans()
		}
	}()
	return s, nil
}

// Close ends every process still under this one that the host did not
// start (orphans of upstreams that left their tree and cleared their
// environment), and reaps them.
func (s *Subreaper) Close() error {
	close(s.stop)
	<-s.done
	me := os.Getpid()
	var orphans []procInfo
	procs := listProcs()
	Children.mu.RLock()
	for _, p := range procs {
		if p.ppid == me && !Children.own[p.pid] {
			orphans = append(orphans, p)
			orphans = append(orphans, treeOf(procs, p.pid)...)
		}
	}
	Children.mu.RUnlock()
	killProcs(orphans, Grace/2)
	reapOrphans()
	return nil
}

// reapOrphans waits for the exited children this process did not start.
func reapOrphans() {
	me := os.Getpid()
	Children.mu.Lock()
	defer Children.mu.Unlock()
	for _, p := range listProcs() {
		if p.ppid != me || p.state != 'Z' || Children.own[p.pid] {
			continue
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(p.pid, &ws, unix.WNOHANG, nil)
	}
}

// killAbandoned ends processes tagged by an mcphost that no longer runs:
// after a kill -9 of mcphost, what its upstreams started outlives it (only
// the servers themselves get Pdeathsig), and this is the first chance to
// end them.
func killAbandoned(grace time.Duration) {
	var dead []procInfo
	alive := map[string]bool{}
	me := os.Getpid()
	for _, p := range listProcs() {
		if p.pid == me { // an mcphost run as an upstream of one that died
			continue
		}
		pid, start, ok := parseTag(environTag(p.pid))
		if !ok {
			continue
		}
		key := strconv.Itoa(pid) + "." + start
		live, seen := alive[key]
		if !seen {
			live = ownerAlive(pid, start)
			alive[key] = live
		}
		if !live {
			dead = append(dead, p)
		}
	}
	killProcs(dead, grace)
}

// ownerAlive reports whether the process pid still runs with the start time
// start (as written in a tag).
func ownerAlive(pid int, start string) bool {
	p, ok := readProc(pid)
	if !ok {
		return errors.Is(syscall.Kill(pid, 0), syscall.EPERM) // another user's: leave it
	}
	return strconv.FormatUint(p.start, 10) == start && p.state != 'Z'
}

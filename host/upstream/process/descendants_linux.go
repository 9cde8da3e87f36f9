package process

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Descendants of upstreams. A server's process group (Setpgid) holds the
// children that stay in it, but one that calls setsid, or a daemon that
// double-forks, leaves the group and, once its parent exits, the tree. Two
// marks find them again: every upstream process gets a tag in its
// environment (MCPHOST_UPSTREAM), which its descendants inherit, and the
// tree under the server is read from /proc just before it is stopped. A
// descendant that both leaves the tree and execs with a cleared environment
// is found only at shutdown, as an orphan of the subreaper (subreaper_linux.go).

// upstreamTagEnv names the environment variable that tags an upstream's
// processes: OWNERPID.OWNERSTART.SEQ, the mcphost that started it (pid and
// start time, so a later mcphost can tell a dead owner from a live one) and
// which start it was.
const TagEnv = "MCPHOST_UPSTREAM"

var tagSeq atomic.Uint64

// self is this process's pid and start time (in clock ticks since boot).
var self = sync.OnceValue(func() procInfo {
	p, _ := readProc(os.Getpid())
	return p
})

// newUpstreamTag returns a tag for one upstream process start.
func NewTag() string {
	s := self()
	return fmt.Sprintf("%d.%d.%d", s.pid, s.start, tagSeq.Add(1))
}

// procInfo is what /proc/PID/stat says of a process.
type procInfo struct {
	pid, ppid int
	state     byte   // R, S, D, Z, ...
	start     uint64 // start time since boot, in clock ticks
}

// readProc reads /proc/PID/stat.
func readProc(pid int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	return parseStat(pid, b)
}

// parseStat decodes /proc/PID/stat. The command name is chosen by the
// process (it may hold spaces and parentheses), so fields are counted from
// the last ')'.
func parseStat(pid int, b []byte) (procInfo, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return procInfo{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil || len(f[0]) != 1 {
		return procInfo{}, false
	}
	return procInfo{pid: pid, ppid: ppid, state: f[0][0], start: start}, true
}

// listProcs returns every process /proc shows.
func listProcs() []procInfo {
	names, _ := filepath.Glob("/proc/[0-9]*")
	out := make([]procInfo, 0, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(filepath.Base(n))
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// environTag returns the upstream tag in a process's environment, if it
// has one and its environment is readable (same user, not setuid).
func environTag(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	return tagFromEnviron(b)
}

// tagFromEnviron finds the tag in an environment block (NUL-separated
// KEY=VALUE pairs, as /proc/PID/environ holds them).
func tagFromEnviron(b []byte) string {
	prefix := []byte(TagEnv + "=")
	for _, kv := range bytes.Split(b, []byte{0}) {
		if bytes.HasPrefix(kv, prefix) {
			return string(kv[len(prefix):])
		}
	}
	return ""
}

// treeOf returns the live processes under root (not root itself).
func treeOf(procs []procInfo, root int) []procInfo {
	children := make(map[int][]procInfo)
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p)
	}
	var out []procInfo
	queue := []int{root}
	seen := map[int]bool{root: true}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if seen[c.pid] {
				continue
			}
			seen[c.pid] = true
			out = append(out, c)
			queue = append(queue, c.pid)
		}
	}
	return out
}

// Descendants returns the processes under root and those tagged with tag,
// wherever they are now.
func Descendants(root int, tag string) []procInfo {
	procs := listProcs()
	set := make(map[int]procInfo)
	if root > 0 {
		for _, p := range treeOf(procs, root) {
			set[p.pid] = p
		}
	}
	me := os.Getpid()
	for _, p := range procs {
		if p.pid == me || p.pid == root {
			continue
		}
		if _, ok := set[p.pid]; !ok && tag != "" && environTag(p.pid) == tag {
			set[p.pid] = p
			for _, d := range treeOf(procs, p.pid) {
				set[d.pid] = d
			}
		}
	}
	out := make([]procInfo, 0, len(set))
	for _, p := range set {
		out = append(out, p)
	}
	return out
}

// signalProcs signals each process that is still the one listed (same pid
// and start time, so a reused pid is left alone) and not a zombie; it
// returns how many it signalled.
func signalProcs(procs []procInfo, sig syscall.Signal) int {
	n := 0
	for _, p := range procs {
		now, ok := readProc(p.pid)
		if !ok || now.start != p.start || now.state == 'Z' {
			continue
		}
		if syscall.Kill(p.pid, sig) == nil {
			n++
		}
	}
	return n
}

// killProcs sends SIGTERM to procs, waits up to grace for them to go, then
// sends SIGKILL to what remains.
func killProcs(procs []procInfo, grace time.Duration) {
	if signalProcs(procs, syscall.SIGTERM) == 0 {
		return
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if signalProcs(procs, 0) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	signalProcs(procs, syscall.SIGKILL)
}

// KillDescendants ends what an upstream process left behind: the tree
// under root as snapshot (root itself gone or going), and every process
// tagged with tag. New ones may be started while it kills, so it looks
// again a few times.
func KillDescendants(snapshot []procInfo, tag string, grace time.Duration) {
	killProcs(snapshot, grace)
	for range 3 {
		rest := Descendants(0, tag)
		if len(rest) == 0 {
			return
		}
		killProcs(rest, grace)
	}
}

// parseTag splits a tag into its owner (pid and start time, as written)
// and reports whether it is well formed.
func parseTag(tag string) (ownerPid int, ownerStart string, ok bool) {
	f := strings.SplitN(tag, ".", 3) // OWNERPID.OWNERSTART.SEQ
	if len(f) != 3 {
		return 0, "", false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return 0, "", false
	}
	if _, err := strconv.ParseUint(f[1], 10, 64); err != nil {
		return 0, "", false
	}
	return pid, f[1], true
}

package process

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Cgroups: where this process's cgroup (v2) is writable, each upstream
// process is started inside a cgroup of its own (clone3 with
// CLONE_INTO_CGROUP, so it is there from its first instruction), and
// nothing it starts can leave it without privileges: stopping the server
// writes cgroup.kill, which ends every process in it, including those that
// left the tree and cleared their environment. Where cgroups are not
// writable (most desktops, many containers) the tags and the tree
// (descendants_linux.go) are all there is.
//
// Layout: OWN/mcphost.PID.START/SEQ, where OWN is this process's cgroup.
// mcphost itself stays in OWN, which is allowed because mcphost enables no
// controllers for the groups it makes.

// cgroupParent returns this process's cgroup directory, or "" when there
// is no cgroup v2 hierarchy to use.
var cgroupParent = sync.OnceValue(func() string {
	own, err := ownCgroupPath()
	if err != nil {
		return ""
	}
	mount, err := cgroup2Mount()
	if err != nil {
		return ""
	}
	return filepath.Join(mount, own)
})

// cgroupBaseName is the directory this process makes its upstreams'
// cgroups in, under its own cgroup.
func cgroupBaseName() string {
	s := self()
	return fmt.Sprintf("mcphost.%d.%d", s.pid, s.start)
}

// ownCgroupPath reads the cgroup v2 path of this process ("0::/PATH").
func ownCgroupPath() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	return parseCgroupFile(b)
}

func parseCgroupFile(b []byte) (string, error) {
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok && strings.HasPrefix(p, "/") && !strings.Contains(p, "..") {
			return p, nil
		}
	}
	return "", errors.New("no cgroup v2 entry")
}

// cgroup2Mount finds where the cgroup v2 hierarchy is mounted.
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := parseMountinfoLine(sc.Text()); ok {
			return m, nil
		}
	}
	return "", errors.New("no cgroup2 mount")
}

// parseMountinfoLine returns the mount point of a cgroup2 line of
// /proc/PID/mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS... - TYPE SOURCE OPTS".
func parseMountinfoLine(line string) (string, bool) {
	pre, post, ok := strings.Cut(line, " - ")
	if !ok {
		return "", false
	}
	f, g := strings.Fields(pre), strings.Fields(post)
	if len(f) < 5 || len(g) < 1 || g[0] != "cgroup2" || f[3] != "/" {
		return "", false
	}
	return unescapeMount(f[4]), true
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// upstreamCgroup is the cgroup of one upstream process start.
type Cgroup struct {
	dir string
	fd  *os.File // open until the process is started in it
}

// newUpstreamCgroup makes a cgroup for one upstream start, or returns nil
// when cgroups cannot be used here.
func NewCgroup(seq string) *Cgroup {
	parent := cgroupParent()
	if parent == "" {
		return nil
	}
	dir := filepath.Join(parent, cgroupBaseName(), seq)
	err := os.MkdirAll(dir, 0o755)
	if errors.Is(err, os.ErrNotExist) {
		// Another upstream's close removed the base directory as it
		// emptied, between the two levels: once more.
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		os.Remove(dir)
		return nil
	}
	return &Cgroup{dir: dir, fd: f}
}

// Apply has cmd start in the group.
func (g *Cgroup) Apply(cmd *exec.Cmd) {
	if g != nil {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(g.fd.Fd())
	}
}

// Started closes the directory once the process is in the group.
func (g *Cgroup) Started() {
	if g != nil && g.fd != nil {
		g.fd.Close()
		g.fd = nil
	}
}

// Kill ends every process in the group, waits up to grace for it to
// empty, and removes it (and the base directory, once it is empty).
func (g *Cgroup) Kill(grace time.Duration) {
	if g == nil {
		return
	}
	g.Started()
	killCgroup(g.dir, grace)
	os.Remove(filepath.Dir(g.dir)) // fails while other upstreams have groups: fine
}

// killCgroup writes cgroup.kill (Linux 5.14+), or signals each process in
// cgroup.procs on older kernels, until the group is empty; then removes it.
func killCgroup(dir string, grace time.Duration) {
	deadline := time.Now().Add(grace)
	killed := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0) == nil
	for {
		procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil || len(bytes.TrimSpace(procs)) == 0 {
			break
		}
		if !killed {
			for _, f := range strings.Fields(string(procs)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	os.Remove(dir)
}

// killAbandonedCgroups ends the groups made by an mcphost that no longer
// runs (killed with SIGKILL) in this process's cgroup.
func killAbandonedCgroups(grace time.Duration) {
	parent := cgroupParent()
	if parent == "" {
		return
	}
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "mcphost.")
		if !e.IsDir() || !ok {
			continue
		}
		pid, start, ok := parseTag(rest + ".0")
		if !ok || ownerAlive(pid, start) {
			continue
		}
		base := filepath.Join(parent, e.Name())
		groups, _ := os.ReadDir(base)
		for _, g := range groups {
			if g.IsDir() {
				killCgroup(filepath.Join(base, g.Name()), grace)
			}
		}
		os.Remove(base)
	}
}

package process

import (
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, in string
		ok       bool
		want     procInfo
	}{
		{"plain", "42 (sleep) S 7 42 42 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 12345 1000 10", true, procInfo{pid: 42, ppid: 7, state: 'S', start: 12345}},
		{"name with ) and spaces", "42 (a) b) c) Z 1 42 42 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 99 1000 10", true, procInfo{pid: 42, ppid: 1, state: 'Z', start: 99}},
		{"truncated", "42 (sleep) S 7 42", false, procInfo{}},
		{"no name", "42 sleep S 7", false, procInfo{}},
		{"bad ppid", "42 (x) S x 42 42 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 99 1000 10", false, procInfo{}},
	} {
		got, ok := parseStat(42, []byte(tt.in))
		if ok != tt.ok || got != tt.want {
			t.Errorf("%s: parseStat = %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	if me, ok := readProc(os.Getpid()); !ok || me.ppid != os.Getppid() {
		t.Errorf("readProc(self) = %+v, %v; want ppid %d", me, ok, os.Getppid())
	}
}

// FuzzParseStat: /proc/PID/stat holds a name the process chose.
func FuzzParseStat(f *testing.F) {
	f.Add([]byte("42 (sleep) S 7 42 42 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 12345 1000 10"))
	f.Add([]byte("1 ()) R 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"))
	f.Add([]byte(")"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, ok := parseStat(1, b)
		if !ok && p != (procInfo{}) {
			t.Fatalf("failure with a value: %+v", p)
		}
	})
}

func TestTags(t *testing.T) {
	t.Parallel()
	tag := NewTag()
	pid, start, ok := parseTag(tag)
	if !ok || pid != os.Getpid() || start == "" {
		t.Fatalf("parseTag(%q) = %d, %q, %v", tag, pid, start, ok)
	}
	if !ownerAlive(pid, start) {
		t.Errorf("this process is not alive by its own tag %q", tag)
	}
	if ownerAlive(pid, start+"1") {
		t.Errorf("a tag with another start time names this process")
	}
	env := []byte("A=1\x00" + TagEnv + "=" + tag + "\x00B=2")
	if got := tagFromEnviron(env); got != tag {
		t.Errorf("tagFromEnviron = %q, want %q", got, tag)
	}
	for _, bad := range []string{"", "1.2", "x.1.1", "1.x.1", "-1.1.1", "0.1.1"} {
		if _, _, ok := parseTag(bad); ok {
			t.Errorf("parseTag(%q) accepted", bad)
		}
	}
}

// FuzzTags: environments and tags are read from other processes.
func FuzzTags(f *testing.F) {
	f.Add([]byte("A=1\x00MCPHOST_UPSTREAM=12.34.5\x00"))
	f.Add([]byte("MCPHOST_UPSTREAM=\x00"))
	f.Add([]byte("MCPHOST_UPSTREAM=1.2.3.4"))
	f.Fuzz(func(t *testing.T, env []byte) {
		tag := tagFromEnviron(env)
		if pid, _, ok := parseTag(tag); ok && pid <= 0 {
			t.Fatalf("parseTag(%q) gave pid %d", tag, pid)
		}
	})
}

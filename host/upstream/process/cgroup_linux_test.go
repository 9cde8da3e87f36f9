package process

import "testing"

func TestParseCgroupFiles(t *testing.T) {
	t.Parallel()
	if p, err := parseCgroupFile([]byte("12:pids:/x\n0::/user.slice/app.scope\n")); err != nil || p != "/user.slice/app.scope" {
		t.Errorf("parseCgroupFile = %q, %v", p, err)
	}
	for _, bad := range []string{"", "1:cpu:/\n", "0::relative", "0::/a/../b"} {
		if p, err := parseCgroupFile([]byte(bad)); err == nil {
			t.Errorf("parseCgroupFile(%q) = %q, want an error", bad, p)
		}
	}
	for _, tt := range []struct {
		line, want string
		ok         bool
	}{
		{"30 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate", "/sys/fs/cgroup", true},
		{`30 23 0:26 / /sys/fs/my\040cgroup rw - cgroup2 none rw`, "/sys/fs/my cgroup", true},
		{"31 23 0:27 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu", "", false},
		{"32 23 0:26 /sub /mnt rw - cgroup2 cgroup2 rw", "", false}, // a subtree: paths would not line up
		{"garbage", "", false},
	} {
		got, ok := parseMountinfoLine(tt.line)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseMountinfoLine(%q) = %q, %v; want %q, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzCgroupFiles: /proc/self/cgroup and mountinfo are read from the
// kernel, but paths in them are chosen by whoever named the mounts and
// groups.
func FuzzCgroupFiles(f *testing.F) {
	f.Add("0::/a/b", "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw")
	f.Add("0::/", `1 2 3 / /x\0 - cgroup2 y`)
	f.Fuzz(func(t *testing.T, cgroup, mountinfo string) {
		if p, err := parseCgroupFile([]byte(cgroup)); err == nil && (p == "" || p[0] != '/') {
			t.Fatalf("parseCgroupFile(%q) = %q", cgroup, p)
		}
		parseMountinfoLine(mountinfo)
	})
}

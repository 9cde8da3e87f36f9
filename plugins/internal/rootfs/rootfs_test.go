package rootfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// TestRootFSRefuses checks the FS itself, below WASI: each operation that
// would leave the grant or change a read-only one is refused with an errno.
func TestRootFSRefuses(t *testing.T) {
	t.Parallel()
	_, grant := testproc.EscapeTree(t)
	rw, err := openRootFS(grant, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.close()
	ro, err := openRootFS(grant, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.close()
	open := func(fsys experimentalsys.FS, name string, flag experimentalsys.Oflag) func() experimentalsys.Errno {
		return func() experimentalsys.Errno {
			f, errno := fsys.OpenFile(name, flag, 0o644)
			if errno == 0 {
				f.Close()
			}
			return errno
		}
	}
	stat := func(fsys experimentalsys.FS, name string) func() experimentalsys.Errno {
		return func() experimentalsys.Errno { _, errno := fsys.Stat(name); return errno }
	}
	for _, tc := range []struct {
		name string
		op   func() experimentalsys.Errno
		want experimentalsys.Errno // 0: any refusal
	}{
		{"open a link that leaves", open(rw, "pre", experimentalsys.O_RDONLY), experimentalsys.EPERM},
		{"open an absolute link", open(rw, "pre-abs", experimentalsys.O_RDONLY), experimentalsys.EPERM},
		{"create through a link", open(rw, "wlink", experimentalsys.O_WRONLY|experimentalsys.O_CREAT), experimentalsys.EPERM},
		{"open through a dir link", open(rw, "dirlink/secret.txt", experimentalsys.O_RDONLY), experimentalsys.EPERM},
		{"open ..", open(rw, "../secret.txt", experimentalsys.O_RDONLY), experimentalsys.EPERM},
		{"list a link to /", open(rw, "rootlink", experimentalsys.O_RDONLY|experimentalsys.O_DIRECTORY), experimentalsys.EPERM},
		{"stat a link that leaves", stat(rw, "pre"), experimentalsys.EPERM},
		{"symlink up", func() experimentalsys.Errno { return rw.Symlink("../secret.txt", "x") }, experimentalsys.EPERM},
		{"symlink absolute", func() experimentalsys.Errno { return rw.Symlink("/etc/passwd", "x") }, experimentalsys.EPERM},
		{"symlink up from a subdir", func() experimentalsys.Errno { return rw.Symlink("../../x", "given.txt/../y") }, experimentalsys.EPERM},
		{"rename out", func() experimentalsys.Errno { return rw.Rename("given.txt", "../given.txt") }, experimentalsys.EPERM},
		{"link out", func() experimentalsys.Errno { return rw.Link("given.txt", "../given.txt") }, experimentalsys.EPERM},
		{"mkdir through a link", func() experimentalsys.Errno { return rw.Mkdir("dirlink/new", 0o755) }, experimentalsys.EPERM},
		{"unlink through a link", func() experimentalsys.Errno { return rw.Unlink("dirlink/secret.txt") }, experimentalsys.EPERM},
		{"read-only write", open(ro, "given.txt", experimentalsys.O_WRONLY), experimentalsys.EROFS},
		{"read-only create", open(ro, "new", experimentalsys.O_RDONLY|experimentalsys.O_CREAT), experimentalsys.EROFS},
		{"read-only truncate", open(ro, "given.txt", experimentalsys.O_RDONLY|experimentalsys.O_TRUNC), experimentalsys.EROFS},
		{"read-only symlink", func() experimentalsys.Errno { return ro.Symlink("given.txt", "in") }, experimentalsys.EROFS},
		{"read-only link", func() experimentalsys.Errno { return ro.Link("given.txt", "hl") }, experimentalsys.EROFS},
		{"read-only unlink", func() experimentalsys.Errno { return ro.Unlink("given.txt") }, experimentalsys.EROFS},
		{"read-only rename", func() experimentalsys.Errno { return ro.Rename("given.txt", "g2") }, experimentalsys.EROFS},
		{"read-only mkdir", func() experimentalsys.Errno { return ro.Mkdir("d", 0o755) }, experimentalsys.EROFS},
		{"read-only chmod", func() experimentalsys.Errno { return ro.Chmod("given.txt", 0o777) }, experimentalsys.EROFS},
		{"read-only utimens", func() experimentalsys.Errno { return ro.Utimens("given.txt", 0, 0) }, experimentalsys.EROFS},
	} {
		if got := tc.op(); got == 0 || tc.want != 0 && got != tc.want {
			t.Errorf("%s: errno %v, want %v", tc.name, got, tc.want)
		}
	}
	// Still usable inside.
	f, errno := ro.OpenFile("given.txt", experimentalsys.O_RDONLY, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	buf := make([]byte, 16)
	n, errno := f.Read(buf)
	f.Close()
	if errno != 0 || string(buf[:n]) != "given" {
		t.Fatalf("read given.txt: %q, %v", buf[:n], errno)
	}
	if errno := ro.Symlink("given.txt", "in"); errno != experimentalsys.EROFS {
		t.Fatal(errno)
	}
	if errno := rw.Symlink("given.txt", "in"); errno != 0 {
		t.Fatalf("symlink inside: %v", errno)
	}
	if st, errno := rw.Stat("in"); errno != 0 || st.Mode&fs.ModeType != 0 {
		t.Fatalf("stat through an inside link: %v %v", st.Mode, errno)
	}
}

func TestDownwardTarget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		target string
		want   bool
	}{
		{"a", true},
		{"sub/a", true},
		{".", true},
		{"./a", true},
		{"a//b/", true},
		{"a..b", true},
		// Inside where a link is made, outside once it is renamed, hard
		// linked or made through a linked directory: a/l -> ../x is x,
		// l -> ../x is outside.
		{"../a", false},
		{"..", false},
		{"sub/../a", false},
		{"sub/..", false},
		{"sub/../../a", false},
		{"/etc/passwd", false},
		{"", false},
		{"a\x00", false},
		{`..\..\a`, false},
		{`sub\a`, false},
	} {
		if got := downwardTarget(tc.target); got != tc.want {
			t.Errorf("downwardTarget(%q) = %v, want %v", tc.target, got, tc.want)
		}
	}
}

func FuzzDownwardTarget(f *testing.F) {
	for _, s := range []string{"a", "sub/a", "../a", "a/./../..", "/x", "a/..", "..."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		if !downwardTarget(target) {
			return
		}
		// Whatever is accepted never climbs above the link's directory,
		// walked one component at a time, so it stays inside from any
		// directory of the grant the link is moved to.
		depth := 0
		for _, c := range strings.Split(target, "/") {
			switch c {
			case "", ".":
			case "..":
				depth--
				if depth < 0 {
					t.Fatalf("accepted %q, which climbs above its directory", target)
				}
			default:
				depth++
			}
		}
		if strings.HasPrefix(target, "/") || strings.ContainsAny(target, "\x00\\") {
			t.Fatalf("accepted %q", target)
		}
	})
}

// TestRootFSOpenFileCount checks the count below WASI: every open takes
// one, a failed open none, a close gives it back once, and wazero's own
// open of the grant's directory is let past the cap once.
func TestRootFSOpenFileCount(t *testing.T) {
	t.Parallel()
	_, grant := testproc.EscapeTree(t)
	rw, err := openRootFS(grant, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.close()
	var files []experimentalsys.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for i := 0; i < MaxOpenFiles; i++ {
		name, flag := "given.txt", experimentalsys.O_RDONLY
		if i%2 == 1 {
			name, flag = ".", experimentalsys.O_RDONLY|experimentalsys.O_DIRECTORY
		}
		f, errno := rw.OpenFile(name, flag, 0)
		if errno != 0 {
			t.Fatalf("open %d: %v", i, errno)
		}
		files = append(files, f)
	}
	if _, errno := rw.OpenFile("given.txt", experimentalsys.O_RDONLY, 0); errno != experimentalsys.EIO || !rw.files.refused.Load() {
		t.Fatalf("past the cap: errno %v, refused %v; want EIO, noted", errno, rw.files.refused.Load())
	}
	f, errno := rw.OpenFile(".", experimentalsys.O_RDONLY, 0) // wazero's preopen
	if errno != 0 {
		t.Fatalf("the grant's own directory past the cap: %v", errno)
	}
	files = append(files, f)
	if _, errno := rw.OpenFile(".", experimentalsys.O_RDONLY, 0); errno != experimentalsys.EIO {
		t.Fatalf("the grant's directory a second time past the cap: %v, want EIO", errno)
	}
	// Closing twice gives back one.
	files[0].Close()
	files[0].Close()
	if got := rw.files.n.Load(); got != MaxOpenFiles {
		t.Fatalf("count %d after a double close, want %d", got, MaxOpenFiles)
	}
	for _, f := range files[1:] {
		f.Close()
	}
	files = nil
	// Failed opens keep nothing.
	for _, tc := range []struct {
		name string
		flag experimentalsys.Oflag
	}{
		{"missing", experimentalsys.O_RDONLY},
		{"given.txt", experimentalsys.O_RDONLY | experimentalsys.O_DIRECTORY},
		{"pre", experimentalsys.O_RDONLY},
	} {
		if _, errno := rw.OpenFile(tc.name, tc.flag, 0); errno == 0 {
			t.Errorf("open %s: no error", tc.name)
		}
	}
	if got := rw.files.n.Load(); got != 0 {
		t.Fatalf("count %d after closing everything, want 0", got)
	}
}

// TestRootFSRewindReplacedDir: rewinding a directory reopens it through
// the root; when the guest has replaced it by a file the reopened
// descriptor must be closed, not leaked past the count. Not parallel,
// unlike the other tests: it counts the process's descriptors.
func TestRootFSRewindReplacedDir(t *testing.T) {
	grant := t.TempDir()
	d := filepath.Join(grant, "d")
	rw, err := openRootFS(grant, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.close()
	before := -1
	for i := 0; i < 20; i++ {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		f, errno := rw.OpenFile("d", experimentalsys.O_RDONLY|experimentalsys.O_DIRECTORY, 0)
		if errno != 0 {
			t.Fatal(errno)
		}
		if before < 0 {
			before = testproc.HostFDs(t)
		}
		if err := errors.Join(os.Remove(d), os.WriteFile(d, nil, 0o644)); err != nil {
			t.Fatal(err)
		}
		if _, errno := f.Seek(0, io.SeekStart); errno != 0 {
			t.Fatal(errno)
		}
		if _, errno := f.Readdir(-1); errno == 0 {
			t.Errorf("readdir of a directory replaced by a file: no error")
		}
		f.Close()
		os.Remove(d)
	}
	if after := testproc.HostFDs(t); after > before+2 {
		t.Errorf("rewinding a replaced directory leaked %d descriptors", after-before)
	}
	if got := rw.files.n.Load(); got != 0 {
		t.Errorf("count %d, want 0", got)
	}
}

// openRootFS opens the host directory dir as a grant seen by one instance.
func openRootFS(dir string, readOnly bool) (*rootFS, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &rootFS{grant: &grant{root: r, readOnly: readOnly}, files: &OpenFiles{}}, nil
}

func (r *rootFS) close() { r.root.Close() }

// TestGuestLinksStayInside moves links the guest made as the review that
// found the old rule did: renamed, hard-linked, and made through a linked
// directory. Whatever is accepted still leads inside the grant for a host
// tool that follows it with the plain OS.
func TestGuestLinksStayInside(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	grant := filepath.Join(base, "g")
	for _, err := range []error{
		os.MkdirAll(filepath.Join(grant, "a", "b"), 0o755),
		os.WriteFile(filepath.Join(base, "outside"), []byte("host-secret"), 0o644),
		os.WriteFile(filepath.Join(grant, "a", "b", "in"), []byte("inside"), 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	rw, err := openRootFS(grant, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.close()
	for _, tc := range []struct {
		target, link string
		want         experimentalsys.Errno
	}{
		{"../outside", "a/l", experimentalsys.EPERM}, // inside as written, outside once renamed to l
		{"b/../../outside", "a/m", experimentalsys.EPERM},
		{".", "d", 0}, // a linked directory...
		{"../outside", "d/n", experimentalsys.EPERM}, // ...through which n lands in the grant's top
		{"b/in", "a/ok", 0},
	} {
		if got := rw.Symlink(tc.target, tc.link); got != tc.want {
			t.Errorf("symlink %s -> %s: errno %v, want %v", tc.link, tc.target, got, tc.want)
		}
	}
	// Accepted links, moved anywhere in the grant, stay inside it.
	if errno := rw.Rename("a/ok", "ok"); errno != 0 {
		t.Fatal(errno)
	}
	if errno := rw.Link("ok", "a/b/ok2"); errno != 0 {
		t.Fatal(errno)
	}
	err = filepath.WalkDir(grant, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		real, err := filepath.EvalSymlinks(p)
		if err == nil && !strings.HasPrefix(real, grant+string(filepath.Separator)) && real != grant {
			t.Errorf("%s leads to %s, outside the grant", p, real)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFoundLinksStayPut: a symlink the guest found in the grant with a
// target it could not have made ("../b" inside a/, which names a/../b,
// inside; an absolute path) is neither hard-linked nor renamed to a new
// name, where "../b" would lead out of the grant; one with a downward
// target is, and a guest's link to a regular file still works.
func TestFoundLinksStayPut(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	grant := filepath.Join(base, "g")
	for _, err := range []error{
		os.MkdirAll(filepath.Join(grant, "a"), 0o755),
		os.WriteFile(filepath.Join(base, "b"), []byte("host-secret"), 0o644),
		os.WriteFile(filepath.Join(grant, "b"), []byte("inside"), 0o644),
		os.Symlink("../b", filepath.Join(grant, "a", "up")),
		os.Symlink(filepath.Join(base, "b"), filepath.Join(grant, "abs")),
		os.Symlink("../../b", filepath.Join(grant, "a", "out")),
		os.Symlink("b", filepath.Join(grant, "down")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	rw, err := openRootFS(grant, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.close()
	for _, tc := range []struct {
		name string
		op   func() experimentalsys.Errno
		want experimentalsys.Errno
	}{
		{"hard-link a/up to the top", func() experimentalsys.Errno { return rw.Link("a/up", "up2") }, experimentalsys.EPERM},
		{"hard-link a/up beside it", func() experimentalsys.Errno { return rw.Link("a/up", "a/up2") }, experimentalsys.EPERM},
		{"hard-link an absolute link", func() experimentalsys.Errno { return rw.Link("abs", "abs2") }, experimentalsys.EPERM},
		{"hard-link a link that already leaves", func() experimentalsys.Errno { return rw.Link("a/out", "a/out2") }, experimentalsys.EPERM},
		{"rename a/up to the top", func() experimentalsys.Errno { return rw.Rename("a/up", "up3") }, experimentalsys.EPERM},
		{"hard-link a downward link", func() experimentalsys.Errno { return rw.Link("down", "a/down2") }, 0},
		{"rename a downward link", func() experimentalsys.Errno { return rw.Rename("a/down2", "down3") }, 0},
		{"hard-link a file", func() experimentalsys.Errno { return rw.Link("b", "a/b2") }, 0},
	} {
		if got := tc.op(); got != tc.want {
			t.Errorf("%s: errno %v, want %v", tc.name, got, tc.want)
		}
	}
	err = filepath.WalkDir(grant, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		if real, err := filepath.EvalSymlinks(p); err == nil && real == filepath.Join(base, "b") {
			switch rel, _ := filepath.Rel(grant, p); rel {
			case filepath.Join("a", "out"), "abs": // found there, not made
			default:
				t.Errorf("%s, a name the guest gave, leads to %s, outside the grant", rel, real)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

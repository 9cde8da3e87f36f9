// Package rootfs is a plugin's allowed_paths as the guest's WASI
// filesystem: each grant an os.Root, so that no path, ".." or symlink the
// guest names (or finds) leaves the granted directory, read-only grants
// that refuse every change, and a cap on the files one instance holds
// open.
package rootfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tetratelabs/wazero"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// rootFS is one instance's view of one allowed_paths grant: every path
// the guest names is resolved by the grant's os.Root, which walks it one
// component at a time and refuses any step (a "..", an absolute or
// relative symlink, one the guest made or one that was there) that would
// leave the granted directory. wazero's own DirFS joins strings and lets
// the kernel follow symlinks, so a guest could read, write and list the
// whole host through a link it created in a writable grant.
//
// A read-only grant opens files read-only and refuses every change,
// links included. Symlinks the guest creates must point downward (see
// downwardTarget), so that host tools reading the directory are not led
// out of it either; resolution is confined whatever the target.
//
// Every file or directory the guest holds open is a host descriptor, so
// the views of one instance share a count of them, capped at
// MaxOpenFiles (see openFiles).
type rootFS struct {
	experimentalsys.UnimplementedFS
	*grant
	files *OpenFiles
	// dotOpen is set once wazero has opened the grant's directory itself
	// (its preopen), which is counted but never refused.
	dotOpen atomic.Bool
}

// grant is one allowed_paths directory, opened once per plugin and shared
// by the views of its instances.
type grant struct {
	root     *os.Root
	readOnly bool
	mount    string // where the guest sees it
}

// Grants are a plugin's allowed_paths, sorted by guest path.
type Grants []*grant

// Open opens allowed_paths (host directory, "ro:" first for read-only,
// to guest path); the caller closes them when the plugin closes.
func Open(paths map[string]string) (Grants, error) {
	var gs Grants
	for host, guest := range paths {
		dir, ro := strings.CutPrefix(host, "ro:")
		r, err := os.OpenRoot(dir)
		if err != nil {
			gs.Close()
			return nil, fmt.Errorf("allowed_paths %q: %w (the granted directory must exist)", host, err)
		}
		gs = append(gs, &grant{root: r, readOnly: ro, mount: guest})
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].mount < gs[j].mount })
	return gs, nil
}

// FSConfig mounts the grants for one new instance, whose descriptors
// files counts.
func (gs Grants) FSConfig(files *OpenFiles) wazero.FSConfig {
	cfg := wazero.NewFSConfig()
	for _, g := range gs {
		cfg = cfg.(sysfs.FSConfig).WithSysFSMount(&rootFS{grant: g, files: files}, g.mount)
	}
	return cfg
}

// Close closes the granted directories.
func (gs Grants) Close() {
	for _, g := range gs {
		g.root.Close()
	}
}

func (r *rootFS) String() string { return r.root.Name() }

// MaxOpenFiles bounds the files and directories one instance holds open
// through its grants; past it, opening answers EMFILE. Without a bound a
// guest that opens in a loop (and a pooled instance keeps what it opened
// from call to call) takes every descriptor the host process may have,
// after which the host can no longer accept a connection or open a file.
//
// The bound is per instance, as RLIMIT_NOFILE is per process: a guest
// sees EMFILE only for files it holds itself, whichever pooled instance
// serves a call and however busy the others are, like the memory cap and
// the timeout, which are per instance too. The host's exposure is
// MaxOpenFiles times the plugin's instances (1024 at the default of 4,
// 16384 at MaxInstances), and no more than that: a count lives and dies
// with its instance, and closing an instance (a trap, a timeout, a
// reload, a pool that shrinks) closes every file it held, since wazero
// closes a module's open files when it closes the module.
//
// 256 is the soft limit macOS gives every process, so programs written
// for an ordinary process fit: Go's os and io/fs hold one descriptor per
// open file and one while reading a directory (filepath.WalkDir closes
// each before descending), other PDKs' standard libraries the same, and
// builtin:pin holds at most two (its pin file and a temporary file).
const MaxOpenFiles = 256

// OpenFiles counts the descriptors held by the views of one instance.
// Its refusal note is for path_open (extismhost's wasi.go), since the errnos a
// wazero FS may answer have no EMFILE.
type OpenFiles struct {
	n       atomic.Int32
	refused atomic.Bool
}

// take counts one more, unless the cap is reached and force is false.
func (o *OpenFiles) take(force bool) bool {
	if o.n.Add(1) > MaxOpenFiles && !force {
		o.n.Add(-1)
		o.refused.Store(true)
		return false
	}
	return true
}

func (o *OpenFiles) give() { o.n.Add(-1) }

// ClearRefusal forgets an earlier refusal, before a path_open.
func (o *OpenFiles) ClearRefusal() { o.refused.Store(false) }

// TakeRefusal reports, once, whether an open was refused for the cap since
// ClearRefusal.
func (o *OpenFiles) TakeRefusal() bool { return o.refused.Swap(false) }

// errnoOf maps an error of os.Root to the errno the guest sees. What is
// not an OS error is os.Root refusing a path that leaves the grant: EPERM.
func errnoOf(err error) experimentalsys.Errno {
	if err == nil {
		return 0
	}
	var se syscall.Errno
	if errors.As(err, &se) {
		return experimentalsys.UnwrapOSError(se)
	}
	switch {
	case errors.Is(err, io.EOF):
		return 0
	case errors.Is(err, fs.ErrNotExist):
		return experimentalsys.ENOENT
	case errors.Is(err, fs.ErrExist):
		return experimentalsys.EEXIST
	case errors.Is(err, fs.ErrClosed):
		return experimentalsys.EBADF
	case errors.Is(err, fs.ErrInvalid):
		return experimentalsys.EINVAL
	}
	return experimentalsys.EPERM
}

const writeFlags = experimentalsys.O_WRONLY | experimentalsys.O_RDWR | experimentalsys.O_CREAT |
	experimentalsys.O_TRUNC | experimentalsys.O_APPEND | experimentalsys.O_EXCL

func (r *rootFS) OpenFile(name string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if flag&experimentalsys.O_DIRECTORY != 0 && flag&(experimentalsys.O_WRONLY|experimentalsys.O_RDWR) != 0 {
		return nil, experimentalsys.EISDIR
	}
	if r.readOnly && flag&writeFlags != 0 {
		return nil, experimentalsys.EROFS
	}
	if flag&experimentalsys.O_NOFOLLOW != 0 && flag&experimentalsys.O_CREAT == 0 {
		// A race that swaps in a link after this check is still confined
		// by the root.
		if fi, err := r.root.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, experimentalsys.ELOOP
		}
	}
	var of int
	switch flag & (experimentalsys.O_RDONLY | experimentalsys.O_WRONLY | experimentalsys.O_RDWR) {
	case experimentalsys.O_WRONLY:
		of = os.O_WRONLY
	case experimentalsys.O_RDWR:
		of = os.O_RDWR
	default:
		of = os.O_RDONLY
	}
	for _, m := range []struct {
		sys experimentalsys.Oflag
		os  int
	}{
		{experimentalsys.O_APPEND, os.O_APPEND},
		{experimentalsys.O_CREAT, os.O_CREATE},
		{experimentalsys.O_EXCL, os.O_EXCL},
		{experimentalsys.O_SYNC, os.O_SYNC},
		{experimentalsys.O_TRUNC, os.O_TRUNC},
	} {
		if flag&m.sys != 0 {
			of |= m.os
		}
	}
	// wazero opens the grant's directory itself once per instance (its
	// preopen), before any path the guest names under it and whatever the
	// count: refused, wazero would panic.
	preopen := name == "." && flag == experimentalsys.O_RDONLY && !r.dotOpen.Load()
	if !r.files.take(preopen) {
		return nil, experimentalsys.EIO // EMFILE to the guest (extismhost/wasi.go)
	}
	f, err := r.root.OpenFile(name, of, perm)
	if err != nil {
		r.files.give()
		return nil, errnoOf(err)
	}
	if preopen {
		r.dotOpen.Store(true)
	}
	rf, errno := newRootFile(r.root, name, flag, f, r.files)
	if errno != 0 {
		r.files.give()
		return nil, errno
	}
	if flag&experimentalsys.O_DIRECTORY != 0 {
		if isDir, errno := rf.IsDir(); errno != 0 || !isDir {
			rf.Close()
			if errno == 0 {
				errno = experimentalsys.ENOTDIR
			}
			return nil, errno
		}
	}
	return rf, 0
}

func (r *rootFS) Lstat(name string) (sys.Stat_t, experimentalsys.Errno) {
	fi, err := r.root.Lstat(name)
	if err != nil {
		return sys.Stat_t{}, errnoOf(err)
	}
	return sys.NewStat_t(fi), 0
}

func (r *rootFS) Stat(name string) (sys.Stat_t, experimentalsys.Errno) {
	fi, err := r.root.Stat(name)
	if err != nil {
		return sys.Stat_t{}, errnoOf(err)
	}
	return sys.NewStat_t(fi), 0
}

func (r *rootFS) Readlink(name string) (string, experimentalsys.Errno) {
	s, err := r.root.Readlink(name)
	return s, errnoOf(err)
}

func (r *rootFS) Mkdir(name string, perm fs.FileMode) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	errno := errnoOf(r.root.Mkdir(name, perm))
	if errno == experimentalsys.ENOTDIR {
		errno = experimentalsys.ENOENT // as wazero's DirFS
	}
	return errno
}

func (r *rootFS) Chmod(name string, perm fs.FileMode) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	return errnoOf(r.root.Chmod(name, perm))
}

func (r *rootFS) Rename(from, to string) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	if errno := r.movableLink(from); errno != 0 {
		return errno
	}
	return errnoOf(r.root.Rename(from, to))
}

func (r *rootFS) Rmdir(name string) experimentalsys.Errno { return r.remove(name, true) }

func (r *rootFS) Unlink(name string) experimentalsys.Errno { return r.remove(name, false) }

// remove removes name, which must be a directory (rmdir) or must not
// (unlink).
func (r *rootFS) remove(name string, dir bool) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	fi, err := r.root.Lstat(name)
	switch {
	case err != nil:
		return errnoOf(err)
	case dir && !fi.IsDir():
		return experimentalsys.ENOTDIR
	case !dir && fi.IsDir():
		return experimentalsys.EISDIR
	}
	return errnoOf(r.root.Remove(name))
}

// Link refuses, like Rename, to give a new name to a symlink whose target
// the guest could not have made (see movableLink).
func (r *rootFS) Link(oldName, newName string) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	if errno := r.movableLink(oldName); errno != 0 {
		return errno
	}
	return errnoOf(r.root.Link(oldName, newName))
}

// movableLink refuses (EPERM) to let name, when it is a symlink whose
// target is not downward (one found in the grant, such as "../x" or an
// absolute path), move to another directory by rename or gain a name there
// by link(2), which links the symlink itself: "../b" from a/l names a/../b,
// inside the grant, but from l it names the grant's parent. The guest
// cannot follow such a link either way (os.Root), but host tools and
// operators reading the directory would.
func (r *rootFS) movableLink(name string) experimentalsys.Errno {
	fi, err := r.root.Lstat(name)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return 0 // not a symlink; the rename or link reports its own errors
	}
	target, err := r.root.Readlink(name)
	if err != nil {
		return errnoOf(err)
	}
	if !downwardTarget(target) {
		return experimentalsys.EPERM
	}
	return 0
}

// Symlink refuses a target that does not point downward.
func (r *rootFS) Symlink(target, linkName string) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	if !downwardTarget(target) {
		return experimentalsys.EPERM
	}
	return errnoOf(r.root.Symlink(target, linkName))
}

// downwardTarget reports whether a guest may create a symlink to target:
// a relative path with no ".." component, which names something at or
// below the link's own directory wherever the link is.
//
// Checking a target against where the link is made is not enough: the
// guest can rename or hard-link the link to another directory of the
// grant, rename a directory holding it, or make it through a directory
// that is itself a link, and "../x", inside at a/l, leads out at l. The
// guest still cannot follow it (os.Root confines every path it names),
// but host tools and operators reading the directory would. Checking
// again on every rename and link would mean walking the links under a
// renamed directory; a target that never climbs stays inside under any
// rename or link, and a chain of such links only descends. Guests rarely
// need "..": builtin:pin makes no links at all.
func downwardTarget(target string) bool {
	if target == "" || target[0] == '/' || strings.ContainsAny(target, "\x00\\") || len(target) > 4096 {
		return false
	}
	for _, c := range strings.Split(target, "/") {
		if c == ".." {
			return false
		}
	}
	return true
}

func (r *rootFS) Utimens(name string, atim, mtim int64) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	return errnoOf(r.root.Chtimes(name, utime(atim), utime(mtim)))
}

// utime converts a wazero timestamp; the zero time leaves it unchanged.
func utime(ns int64) time.Time {
	if ns == experimentalsys.UTIME_OMIT {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// rootFile is a file opened through a rootFS: wazero's adapter of an
// fs.File (sysfs.AdaptFS) over the descriptor the root opened, plus what
// the adapter lacks. Nothing here resolves a path except a directory's
// rewind, which reopens it through the root.
type rootFile struct {
	experimentalsys.File
	src    *rootSource
	flag   experimentalsys.Oflag
	files  *OpenFiles // gets this file back when it closes
	closed bool
}

// newRootFile wraps f, opened by root as name with flag and counted in
// files.
func newRootFile(root *os.Root, name string, flag experimentalsys.Oflag, f *os.File, files *OpenFiles) (*rootFile, experimentalsys.Errno) {
	src := &rootSource{root: root, cur: f, fresh: true}
	af, errno := (&sysfs.AdaptFS{FS: src}).OpenFile(name, flag, 0)
	if errno != 0 {
		f.Close()
		return nil, errno
	}
	return &rootFile{File: af, src: src, flag: flag, files: files}, 0
}

// Close closes the descriptor and gives it back to the count, once: the
// descriptor is gone even when close reports an error, and wazero keeps
// a file whose close failed in its table and closes it again with the
// module.
func (f *rootFile) Close() experimentalsys.Errno {
	errno := f.File.Close()
	if !f.closed {
		f.closed = true
		f.files.give()
	}
	return errno
}

func (f *rootFile) IsAppend() bool { return f.flag&experimentalsys.O_APPEND != 0 }

func (f *rootFile) Truncate(size int64) experimentalsys.Errno {
	if size < 0 {
		return experimentalsys.EINVAL
	}
	if isDir, errno := f.IsDir(); errno != 0 {
		return errno
	} else if isDir {
		return experimentalsys.EISDIR
	}
	return errnoOf(f.src.cur.Truncate(size))
}

func (f *rootFile) Sync() experimentalsys.Errno { return errnoOf(f.src.cur.Sync()) }

func (f *rootFile) Datasync() experimentalsys.Errno { return f.Sync() }

// rootSource is the fs.FS the adapter opens the file from: first the
// descriptor already open, then (to rewind a directory) a reopen through
// the root.
type rootSource struct {
	root  *os.Root
	cur   *os.File
	fresh bool
}

func (s *rootSource) Open(name string) (fs.File, error) {
	if s.fresh {
		s.fresh = false
		return osFile{s.cur}, nil
	}
	// A rewind: the adapter closes the descriptor it had once this one
	// proves to be a directory, but keeps neither when it is not (the
	// guest replaced the directory by a file), so close it here then.
	f, err := s.root.Open(name)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		f.Close()
		if err == nil {
			err = syscall.ENOTDIR
		}
		return nil, err
	}
	s.cur = f
	return osFile{f}, nil
}

// osFile shows the adapter an *os.File without its Readdir, which lstats
// each entry by path; ReadDir reads the types from the descriptor.
type osFile struct{ f *os.File }

func (o osFile) Stat() (fs.FileInfo, error)                { return o.f.Stat() }
func (o osFile) Read(b []byte) (int, error)                { return o.f.Read(b) }
func (o osFile) ReadAt(b []byte, off int64) (int, error)   { return o.f.ReadAt(b, off) }
func (o osFile) Write(b []byte) (int, error)               { return o.f.Write(b) }
func (o osFile) WriteAt(b []byte, off int64) (int, error)  { return o.f.WriteAt(b, off) }
func (o osFile) Seek(off int64, whence int) (int64, error) { return o.f.Seek(off, whence) }
func (o osFile) ReadDir(n int) ([]fs.DirEntry, error)      { return o.f.ReadDir(n) }
func (o osFile) Close() error                              { return o.f.Close() }

var (
	_ experimentalsys.FS   = (*rootFS)(nil)
	_ experimentalsys.File = (*rootFile)(nil)
)

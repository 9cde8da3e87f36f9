// Package pgtest runs a real PostgreSQL server for tests, so that code
// talking to PostgreSQL is tested against the server users run, not a mock.
//
// One server serves a whole test binary: it starts on first use (initdb and
// startup take a second or two, too slow to pay per test) and each test gets
// a fresh, empty database of its own, so tests stay isolated and may run in
// parallel. A package that uses it stops the server from its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
//	func TestStore(t *testing.T) {
//		dsn := pgtest.NewDatabase(t) // postgres://postgres@127.0.0.1:PORT/NAME?sslmode=disable
//		...
//	}
//
// Where PostgreSQL is not installed the tests that ask for it are skipped,
// except under CI (CI set and non-empty), where they fail: CI installs it.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// How long the server may take to answer after it starts, and a stop to
// end before its process group is killed outright.
const (
	readyTimeout = 30 * time.Second
	stopTimeout  = 10 * time.Second
)

var errNotInstalled = errors.New("PostgreSQL is not installed (apt-get install postgresql): " +
	"no initdb and postgres under /usr/lib/postgresql/*/bin or on PATH")

var (
	once     sync.Once
	shared   *server // set by once; nil if the start failed
	startErr error
	dbSeq    atomic.Int64 // makes database names unique within the server
)

// Main runs the tests and then stops the server if one was started. Call
// it from TestMain: os.Exit(pgtest.Main(m)). Without it no process leaks
// either (see launch), but the data directory stays until a later test
// binary sweeps it.
func Main(m *testing.M) int {
	code := m.Run()
	// Waits for a start still in progress, or forbids a later one.
	once.Do(func() {})
	if shared != nil {
		shared.stop()
	}
	return code
}

// NewDatabase creates an empty database for this test on the shared server
// and returns its DSN, a postgres:// URL for pgx or database/sql. The
// database is dropped when the test ends, connections still open or not.
func NewDatabase(t testing.TB) string {
	t.Helper()
	s := get(t)
	name := dbName(t.Name())
	ident := pgx.Identifier{name}.Sanitize()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.exec(ctx, "CREATE DATABASE "+ident); err != nil {
		t.Fatalf("pgtest: creating database %s: %v\nserver log:\n%s", name, err, s.log())
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// FORCE ends the connections a test left open, which would
		// otherwise make the drop fail. Best effort: the server goes anyway.
		if err := s.exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
			t.Logf("pgtest: dropping database %s: %v", name, err)
		}
	})
	return s.dsn(name)
}

// get returns the shared server, starting it on first use, or ends the
// test: skipped where PostgreSQL is missing, failed where it is required.
func get(t testing.TB) *server {
	t.Helper()
	once.Do(func() { shared, startErr = start() })
	if errors.Is(startErr, errNotInstalled) {
		if os.Getenv("CI") != "" {
			t.Fatalf("pgtest: %v; CI must install it (see .ci/run)", startErr)
		}
		t.Skipf("pgtest: %v; skipping (under CI this fails)", startErr)
	}
	if startErr != nil {
		t.Fatalf("pgtest: %v", startErr)
	}
	return shared
}

// dbName is unique within the server and names the test, to make a
// leftover or a server log line easy to trace. At most 63 bytes, the
// identifier limit.
func dbName(test string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "t%d_", dbSeq.Add(1))
	for _, r := range strings.ToLower(test) {
		if b.Len() >= 63 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

type server struct {
	base string        // our directory: data/, postgres.log and owner.pid
	port int           // on 127.0.0.1
	cmd  *exec.Cmd     // the postmaster
	done chan struct{} // closed once the postmaster has exited and been reaped
}

func (s *server) dsn(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// exec runs one statement in the maintenance database "postgres", on a
// connection of its own: CREATE and DROP DATABASE are rare, and a shared
// connection would serialize parallel tests for nothing.
func (s *server) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.dsn("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// log returns the end of the server's log, for error messages.
func (s *server) log() string {
	b, err := os.ReadFile(filepath.Join(s.base, "postgres.log"))
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	const max = 8 << 10
	if len(b) > max {
		b = append([]byte("...\n"), b[len(b)-max:]...)
	}
	return string(b)
}

// start makes a cluster in a new directory and starts the postmaster on it.
func start() (*server, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	sweep()
	base, err := newBase(cred)
	if err != nil {
		return nil, err
	}
	s := &server{base: base}
	if err := s.initdb(bin, cred); err != nil {
		os.RemoveAll(base)
		return nil, err
	}
	// The free port is only free when we look: another test binary may take
	// it before postgres binds it, so try again with another.
	for attempt := 1; ; attempt++ {
		err = s.launch(bin, cred)
		if err == nil {
			return s, nil
		}
		if attempt == 3 || !strings.Contains(s.log(), "could not bind") {
			os.RemoveAll(base)
			return nil, err
		}
	}
}

// findBin returns the directory holding initdb and postgres: the newest
// Debian install (/usr/lib/postgresql/VERSION/bin, which is not on PATH),
// else PATH.
func findBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	best, bestVer := "", -1.0
	for _, d := range dirs {
		v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(d)), 64) // "15", "9.6"
		if err == nil && v > bestVer && isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "postgres")) {
			best, bestVer = d, v
		}
	}
	if best != "" {
		return best, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil && isFile(filepath.Join(filepath.Dir(p), "postgres")) {
		return filepath.Dir(p), nil
	}
	return "", errNotInstalled
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// credential returns whom to run initdb and postgres as: nil (ourselves)
// unless we are root, which postgres refuses to run as; then the postgres
// user that the distribution's package creates.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and PostgreSQL refuses to run as root: need a 'postgres' user to run it as: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("user postgres: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// newBase makes our directory in os.TempDir(), owned by whoever runs
// postgres. Not t.TempDir(): under root that is a 0700 root directory that
// the postgres user cannot enter, and the server outlives any one test.
func newBase(cred *syscall.Credential) (string, error) {
	base, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return "", err
	}
	if base, err = filepath.Abs(base); err == nil {
		err = os.WriteFile(filepath.Join(base, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644)
	}
	if err == nil && cred != nil {
		if err = os.Chown(base, int(cred.Uid), int(cred.Gid)); err == nil {
			err = traversable(filepath.Dir(base), cred)
		}
	}
	if err != nil {
		os.RemoveAll(base)
		return "", err
	}
	return base, nil
}

// traversable fails, with a hint, when the user of cred cannot enter dir
// and each directory above it: initdb would fail later with a vaguer error.
func traversable(dir string, cred *syscall.Credential) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		m := fi.Mode().Perm()
		if ok && !(m&0o001 != 0 || st.Uid == cred.Uid && m&0o100 != 0 || st.Gid == cred.Gid && m&0o010 != 0) {
			return fmt.Errorf("the postgres user cannot enter %s (mode %v): set TMPDIR to a directory it can reach, such as /tmp", d, m)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// sweep removes what earlier test binaries left when they died without
// cleaning up (SIGKILL, a -timeout panic, no pgtest.Main): their servers
// died with them, but the directories stay, and so does the small SysV
// shared memory segment a postmaster keeps as an interlock. Only where the
// owner and the postmaster are both gone.
func sweep() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "pgtest-*"))
	for _, d := range dirs {
		pidFile := filepath.Join(d, "data", "postmaster.pid")
		if !deadPID(filepath.Join(d, "owner.pid")) {
			continue
		}
		if _, err := os.Stat(pidFile); err == nil {
			if !deadPID(pidFile) {
				continue
			}
			removeShm(pidFile)
		}
		os.RemoveAll(d)
	}
}

// removeShm removes the SysV segment that a dead postmaster's pid file
// names (line 7: key and id), if it is still that one and unattached.
func removeShm(pidFile string) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 7 {
		return
	}
	f := strings.Fields(lines[6])
	if len(f) != 2 {
		return
	}
	key, err1 := strconv.ParseUint(f[0], 10, 64) // a key_t, printed unsigned
	id, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return
	}
	var ds unix.SysvShmDesc
	if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &ds); err == nil && uint32(ds.Perm.Key) == uint32(key) && ds.Nattch == 0 {
		unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	}
}

// deadPID reports whether the file's first line is a pid with no process
// (or a zombie: a killed postmaster's parent is gone, and init may take its
// time to reap it). An unreadable file is not proof of death: it may be
// being written.
func deadPID(file string) bool {
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	return err == nil && pid > 0 && !testproc.Alive(pid)
}

func (s *server) initdb(bin string, cred *syscall.Credential) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Trust auth is safe only because the server listens on 127.0.0.1 alone
	// and has no unix socket. --no-sync: the cluster is thrown away.
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", filepath.Join(s.base, "data"), "-U", "postgres", "--auth=trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	cmd.Env = env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	return nil
}

// launch starts the postmaster on a free port and waits until it answers.
//
// It runs postgres itself rather than `pg_ctl start`: pg_ctl daemonizes the
// server, leaving it to outlive a test binary that is killed or panics
// before its cleanup. A direct child can carry Pdeathsig, so the kernel
// kills the postmaster when the test binary dies however it dies, and its
// backends then exit by themselves (they watch for postmaster death).
// Setpgid keeps a terminal's ^C (sent to the foreground process group) from
// reaching the server before our cleanup does, and lets kill reach the
// postmaster and anything it starts without a session of its own (each
// backend calls setsid, and exits on postmaster death).
func (s *server) launch(bin string, cred *syscall.Credential) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(s.base, "postgres.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own copy
	cmd := exec.Command(filepath.Join(bin, "postgres"),
		"-D", filepath.Join(s.base, "data"),
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=", // TCP only: no socket path to own or to outgrow
		// Durability is worthless for a throwaway cluster; speed is not.
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "shared_buffers=16MB",
		// Dynamic shared memory in files under data/ instead of /dev/shm,
		// where a killed server would leave them; data/ is swept.
		"-c", "dynamic_shared_memory_type=mmap",
	)
	// A file, not a pipe: backends inherit it, and a pipe would keep
	// cmd.Wait waiting on them after the postmaster is gone.
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}

	// Linux sends Pdeathsig when the *thread* that started the child exits,
	// not the process, and Go ends a thread when a goroutine locked to it
	// returns: started from a test's goroutine that did so, the server would
	// die with that test. So start and wait on a thread of our own, locked
	// for the postmaster's lifetime.
	started := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends after Wait, with the child gone
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		cmd.Wait()
		close(done)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("starting postgres: %w", err)
	}
	s.port, s.cmd, s.done = port, cmd, done

	deadline := time.Now().Add(readyTimeout)
	var lastErr error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.dsn("postgres"))
		if err == nil {
			err = conn.Ping(ctx)
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		lastErr = err
		select {
		case <-done:
			return fmt.Errorf("postgres exited while starting (%v)\nserver log:\n%s", cmd.ProcessState, s.log())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.kill()
			return fmt.Errorf("postgres did not answer within %s: %v\nserver log:\n%s", readyTimeout, lastErr, s.log())
		}
	}
}

// stop stops the server and removes its directory. SIGQUIT is what
// `pg_ctl stop -m immediate` sends, without pg_ctl (which also refuses to
// run as root, and reads a pid file where we hold the process): the
// postmaster quits its backends, waits for them, and exits, with no
// shutdown checkpoint to wait for since the data is thrown away.
func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-s.done:
	case <-time.After(stopTimeout):
		s.kill()
	}
	os.RemoveAll(s.base)
}

// kill kills the server's process group, and so the postmaster (whose
// backends then exit by themselves), and waits for it. Only before it is
// reaped: until then the group's id cannot have been reused.
func (s *server) kill() {
	select {
	case <-s.done:
		return
	default:
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
}

// env is ours without the PG* variables, which libpq tools read (PGDATA,
// PGPORT, ...) and which must not point initdb or postgres elsewhere; C
// locale so that no missing locale makes initdb fail.
func env() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "LC_") && !strings.HasPrefix(kv, "LANG=") {
			out = append(out, kv)
		}
	}
	return append(out, "LC_ALL=C", "LANG=C")
}

// freePort returns a loopback port that nothing listens on right now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

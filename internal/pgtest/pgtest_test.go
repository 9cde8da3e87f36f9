// An internal test, to check what sweep cleans up; otherwise it uses only
// the exported API, as other packages do.
package pgtest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatalf("connecting to %s: %v", dsn, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// Two databases of one test are two databases: what one holds the other
// does not see.
func TestNewDatabaseIsFreshAndDistinct(t *testing.T) {
	t.Parallel()
	dsnA, dsnB := NewDatabase(t), NewDatabase(t)
	if dsnA == dsnB {
		t.Fatalf("the same DSN twice: %s", dsnA)
	}
	for _, dsn := range []string{dsnA, dsnB} {
		if !strings.HasPrefix(dsn, "postgres://") || !strings.Contains(dsn, "@127.0.0.1:") {
			t.Errorf("DSN %q: want a postgres:// URL on 127.0.0.1", dsn)
		}
	}
	ctx := t.Context()
	a, b := connect(t, dsnA), connect(t, dsnB)

	var nameA, nameB string
	if err := a.QueryRow(ctx, "SELECT current_database()").Scan(&nameA); err != nil {
		t.Fatal(err)
	}
	if err := b.QueryRow(ctx, "SELECT current_database()").Scan(&nameB); err != nil {
		t.Fatal(err)
	}
	if nameA == nameB {
		t.Fatalf("both connections are in database %s", nameA)
	}

	if _, err := a.Exec(ctx, "CREATE TABLE only_in_a (v int); INSERT INTO only_in_a VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := a.QueryRow(ctx, "SELECT v FROM only_in_a").Scan(&v); err != nil || v != 42 {
		t.Fatalf("reading back from %s: %d, %v", nameA, v, err)
	}
	var inB bool
	if err := b.QueryRow(ctx, "SELECT to_regclass('only_in_a') IS NOT NULL").Scan(&inB); err != nil {
		t.Fatal(err)
	}
	if inB {
		t.Fatalf("table made in %s is visible in %s", nameA, nameB)
	}
	var tables int
	if err := b.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Fatalf("new database %s has %d tables, want none", nameB, tables)
	}
}

// A test's database is gone once the test is, even with a connection
// still open to it.
func TestNewDatabaseDroppedAtCleanup(t *testing.T) {
	t.Parallel()
	var name string
	t.Run("holder", func(t *testing.T) {
		conn := connect(t, NewDatabase(t))
		if err := conn.QueryRow(t.Context(), "SELECT current_database()").Scan(&name); err != nil {
			t.Fatal(err)
		}
		// A second connection the test "forgets": the drop must end it.
		leaked, err := pgx.Connect(t.Context(), NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		_ = leaked
	})
	other := connect(t, NewDatabase(t))
	var n int
	if err := other.QueryRow(t.Context(), "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database %s still exists after its test ended", name)
	}
}

// The server runs as a user PostgreSQL accepts (not root) and listens on
// loopback only.
func TestServerSettings(t *testing.T) {
	t.Parallel()
	conn := connect(t, NewDatabase(t))
	for setting, want := range map[string]string{
		"listen_addresses":        "127.0.0.1",
		"unix_socket_directories": "",
		"fsync":                   "off",
	} {
		var got string
		if err := conn.QueryRow(t.Context(), "SELECT current_setting($1)", setting).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s = %q, want %q", setting, got, want)
		}
	}
}

const holdEnv = "PGTEST_HOLD_SERVER"

// Not a test on its own: the child of TestNoLeakWhenKilled, which starts
// the server, says where its data is, and waits to be killed.
func TestHoldServer(t *testing.T) {
	if os.Getenv(holdEnv) == "" {
		t.Skip("helper of TestNoLeakWhenKilled")
	}
	conn := connect(t, NewDatabase(t))
	var dataDir string
	if err := conn.QueryRow(t.Context(), "SHOW data_directory").Scan(&dataDir); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("DATA %s\n", dataDir)
	time.Sleep(time.Minute) // bounded, should the parent fail to kill us
}

// A test binary killed outright (SIGKILL: no cleanup, no TestMain) leaves
// no PostgreSQL process behind, and the next one's sweep removes its files.
func TestNoLeakWhenKilled(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a second server")
	}
	NewDatabase(t) // skips or fails here as the others do where PostgreSQL is missing
	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldServer$", "-test.count=1")
	cmd.Env = append(os.Environ(), holdEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	dataDir := ""
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "DATA "); ok {
			dataDir = d
			break
		}
	}
	if dataDir == "" {
		t.Fatal("the helper printed no data directory")
	}
	base := filepath.Dir(dataDir)
	t.Cleanup(func() { os.RemoveAll(base) }) // in case sweep fails
	pidFile, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(pidFile), "\n")
	postmaster, err := strconv.Atoi(lines[0])
	if err != nil || len(lines) < 7 {
		t.Fatalf("postmaster.pid: %v\n%s", err, pidFile)
	}
	shmid := -1
	if f := strings.Fields(lines[6]); len(f) == 2 {
		shmid, _ = strconv.Atoi(f[1])
	}
	server := append([]int{postmaster}, childrenOf(postmaster)...)
	if len(server) < 2 {
		t.Fatalf("postmaster %d has no children; expected its background processes", postmaster)
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	deadline := time.Now().Add(10 * time.Second)
	for {
		var alive []int
		for _, pid := range server {
			// The postmaster's processes are re-parented and reaped when
			// they exit; any still there is a leak (or, if this times out,
			// a reused pid: unlikely within seconds).
			if syscall.Kill(pid, 0) == nil && !zombie(pid) {
				alive = append(alive, pid)
			}
		}
		if len(alive) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of the killed binary's server still run: %v", alive)
		}
		time.Sleep(20 * time.Millisecond)
	}

	sweep()
	if _, err := os.Stat(base); !os.IsNotExist(err) {
		t.Errorf("sweep left the killed server's directory %s (%v)", base, err)
	}
	var ds unix.SysvShmDesc
	if _, err := unix.SysvShmCtl(shmid, unix.IPC_STAT, &ds); err == nil {
		t.Errorf("sweep left the killed server's shared memory segment %d", shmid)
	}
}

// childrenOf lists the pids whose parent is pid.
func childrenOf(pid int) []int {
	var kids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := stat(p); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			kids = append(kids, p)
		}
	}
	return kids
}

func zombie(pid int) bool {
	f := stat(pid)
	return len(f) > 0 && f[0] == "Z"
}

// stat returns the fields of /proc/pid/stat after the command name: state,
// ppid, ...
func stat(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	return strings.Fields(s)
}

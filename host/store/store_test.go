package store_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/mcphost-project/mcphost/host/store"
)

var testKey = bytes.Repeat([]byte{7}, store.KeySize)

// stores opens a fresh store on every driver this machine runs: SQLite
// always, PostgreSQL when it is installed (pgtest).
func stores(t *testing.T, key []byte) map[string]store.Options {
	t.Helper()
	out := map[string]store.Options{
		store.SQLite: {Driver: store.SQLite, DSN: filepath.Join(t.TempDir(), "mcphost.db"), Key: key},
	}
	if dsn, ok := postgresDSN(t); ok {
		out[store.Postgres] = store.Options{Driver: store.Postgres, DSN: dsn, Key: key}
	}
	return out
}

func open(t *testing.T, o store.Options) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestCRUD(t *testing.T) {
	t.Parallel()
	for name, o := range stores(t, testKey) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := open(t, o)
			rev0, err := s.Revision(ctx)
			if err != nil {
				t.Fatal(err)
			}
			a, err := s.Create(ctx, store.Server{Name: "files", Spec: []byte(`{"name":"files"}`), Secrets: []byte(`{"env":{"K":"v"}}`)})
			if err != nil {
				t.Fatal(err)
			}
			if a.Version != rev0+1 || a.Created.IsZero() {
				t.Fatalf("created %+v, want version %d", a, rev0+1)
			}
			if _, err := s.Create(ctx, store.Server{Name: "files", Spec: []byte(`{}`)}); !errors.Is(err, store.ErrExists) {
				t.Fatalf("second create: %v, want ErrExists", err)
			}
			got, err := s.Server(ctx, "files")
			if err != nil || string(got.Secrets) != `{"env":{"K":"v"}}` || got.Version != a.Version {
				t.Fatalf("read back %+v, %v", got, err)
			}
			if _, _, err := s.Update(ctx, "files", a.Version+100, func(cur *store.Server) (*store.Server, error) { return cur, nil }); !errors.Is(err, store.ErrVersion) {
				t.Fatalf("update at a stale version: %v, want ErrVersion", err)
			}
			b, created, err := s.Update(ctx, "files", a.Version, func(cur *store.Server) (*store.Server, error) {
				next := *cur
				next.Spec = []byte(`{"name":"files","command":"x"}`)
				return &next, nil
			})
			if err != nil || created || b.Version <= a.Version || !b.Created.Equal(a.Created) {
				t.Fatalf("update: %+v created=%v %v", b, created, err)
			}
			list, rev, err := s.Servers(ctx)
			if err != nil || len(list) != 1 || rev != b.Version || string(list[0].Spec) != `{"name":"files","command":"x"}` {
				t.Fatalf("list %+v at %d, %v", list, rev, err)
			}
			if err := s.Delete(ctx, "files", a.Version); !errors.Is(err, store.ErrVersion) {
				t.Fatalf("delete at a stale version: %v", err)
			}
			if err := s.Delete(ctx, "files", 0); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Server(ctx, "files"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("after delete: %v", err)
			}
			if err := s.Delete(ctx, "files", 0); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("second delete: %v", err)
			}
			// If-Match on a server that is not there fails as a
			// precondition (RFC 9110), not as a missing server.
			if err := s.Delete(ctx, "files", b.Version); !errors.Is(err, store.ErrVersion) {
				t.Fatalf("delete of nothing with a version: %v, want ErrVersion", err)
			}
			if _, _, err := s.Update(ctx, "files", b.Version, func(cur *store.Server) (*store.Server, error) {
				return &store.Server{Spec: []byte(`{}`)}, nil
			}); !errors.Is(err, store.ErrVersion) {
				t.Fatalf("update of nothing with a version: %v, want ErrVersion", err)
			}
			// A refused change leaves the revision where it was.
			before, _ := s.Revision(ctx)
			s.Create(ctx, store.Server{Name: "x", Spec: []byte(`{}`)})
			s.Create(ctx, store.Server{Name: "x", Spec: []byte(`{}`)})
			if after, _ := s.Revision(ctx); after != before+1 {
				t.Fatalf("revision %d -> %d after one create and one refused", before, after)
			}
		})
	}
}

func TestSecretsSealedAtRest(t *testing.T) {
	t.Parallel()
	for name, o := range stores(t, testKey) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := open(t, o)
			if _, err := s.Create(ctx, store.Server{Name: "gh", Spec: []byte(`{}`), Secrets: []byte(`{"env":{"GITHUB_TOKEN":"ghp_plaintext"}}`)}); err != nil {
				t.Fatal(err)
			}
			db := rawDB(t, o)
			var sealed string
			if err := db.QueryRow(`SELECT secrets FROM mcphost_servers WHERE name = 'gh'`).Scan(&sealed); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(sealed, "ghp_plaintext") || !strings.HasPrefix(sealed, "v1:") {
				t.Fatalf("secrets at rest: %q", sealed)
			}
			// A sealed value moved to another row does not open there.
			if _, err := s.Create(ctx, store.Server{Name: "other", Spec: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(fmt.Sprintf(`UPDATE mcphost_servers SET secrets = '%s' WHERE name = 'other'`, sealed)); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Server(ctx, "other"); err != nil || got.SecretsErr == nil || got.Secrets != nil {
				t.Fatalf("a sealed value opened under another server's name: %+v %v", got, err)
			}
			// Another key opens nothing; no key says so.
			o2 := o
			o2.Key = bytes.Repeat([]byte{8}, store.KeySize)
			if got, err := open(t, o2).Server(ctx, "gh"); err != nil || got.SecretsErr == nil || !strings.Contains(got.SecretsErr.Error(), "do not open with this key") {
				t.Fatalf("wrong key: %+v %v", got, err)
			}
			o2.Key = nil
			noKey := open(t, o2)
			if got, err := noKey.Server(ctx, "gh"); err != nil || !errors.Is(got.SecretsErr, store.ErrNoKey) {
				t.Fatalf("no key, reading: %+v %v", got, err)
			}
			if _, err := noKey.Create(ctx, store.Server{Name: "s", Spec: []byte(`{}`), Secrets: []byte(`{"headers":{"A":"b"}}`)}); !errors.Is(err, store.ErrNoKey) {
				t.Fatalf("no key, writing a secret: %v", err)
			}
			if _, err := noKey.Create(ctx, store.Server{Name: "plain", Spec: []byte(`{}`)}); err != nil {
				t.Fatalf("no key, writing no secret: %v", err)
			}
		})
	}
}

// TestConcurrentWriters: writers on separate handles (as separate
// processes would be) never tear a server, never lose an update and
// never reuse a version.
func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	for name, o := range stores(t, testKey) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			a, b := open(t, o), open(t, o)
			if _, err := a.Create(ctx, store.Server{Name: "n", Spec: []byte(`{"w":0}`)}); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			versions := map[int64]bool{}
			var wg sync.WaitGroup
			const writers = 20
			for i := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s := a
					if i%2 == 1 {
						s = b
					}
					out, _, err := s.Update(ctx, "n", 0, func(cur *store.Server) (*store.Server, error) {
						// A read-modify-write: a writer that read
						// what another was changing loses an increment.
						var w int
						if _, err := fmt.Sscanf(string(cur.Spec), `{"w":%d}`, &w); err != nil {
							return nil, err
						}
						next := *cur
						next.Spec = []byte(fmt.Sprintf(`{"w":%d}`, w+1))
						next.Secrets = []byte(fmt.Sprintf(`{"env":{"W":"%d"}}`, w+1))
						return &next, nil
					})
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					defer mu.Unlock()
					if versions[out.Version] {
						t.Errorf("version %d given twice", out.Version)
					}
					versions[out.Version] = true
				}()
			}
			wg.Wait()
			got, err := b.Server(ctx, "n")
			if err != nil {
				t.Fatal(err)
			}
			var w int
			fmt.Sscanf(string(got.Spec), `{"w":%d}`, &w)
			if string(got.Secrets) != fmt.Sprintf(`{"env":{"W":"%d"}}`, w) {
				t.Fatalf("torn server: spec %s, secrets %s", got.Spec, got.Secrets)
			}
			if w != writers {
				t.Fatalf("the counter is %d after %d increments: an update was lost", w, writers)
			}
		})
	}
}

// TestSecretsThatDoNotOpen: a server whose secrets do not open with the
// store's key (it changed, or is gone) is listed with SecretsErr instead of
// failing the whole list, and can be deleted or replaced whole.
func TestSecretsThatDoNotOpen(t *testing.T) {
	t.Parallel()
	for name, o := range stores(t, testKey) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := open(t, o)
			for _, n := range []string{"a", "b", "c"} {
				if _, err := s.Create(ctx, store.Server{Name: n, Spec: []byte(`{}`), Secrets: []byte(`{"env":{"K":"` + n + `"}}`)}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Create(ctx, store.Server{Name: "plain", Spec: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
			for _, key := range [][]byte{bytes.Repeat([]byte{9}, store.KeySize), nil} {
				o2 := o
				o2.Key = key
				other := open(t, o2)
				list, _, err := other.Servers(ctx)
				if err != nil || len(list) != 4 {
					t.Fatalf("key %x: list %+v, %v", key, list, err)
				}
				for _, sv := range list {
					if (sv.SecretsErr != nil) != (sv.Name != "plain") || sv.Secrets != nil {
						t.Fatalf("key %x: %s read as %+v", key, sv.Name, sv)
					}
				}
				// Written back as read, the secrets would be lost.
				if _, _, err := other.Update(ctx, "c", 0, func(cur *store.Server) (*store.Server, error) { return cur, nil }); err == nil {
					t.Fatalf("key %x: a server whose secrets did not open was written back", key)
				}
			}
			o2 := o
			o2.Key = bytes.Repeat([]byte{9}, store.KeySize)
			other := open(t, o2)
			if err := other.Delete(ctx, "a", 0); err != nil {
				t.Fatalf("deleting a server whose secrets do not open: %v", err)
			}
			if _, _, err := other.Update(ctx, "b", 0, func(cur *store.Server) (*store.Server, error) {
				return &store.Server{Spec: []byte(`{"new":1}`), Secrets: []byte(`{"env":{"K":"new"}}`)}, nil
			}); err != nil {
				t.Fatalf("replacing a server whose secrets do not open: %v", err)
			}
			if got, err := other.Server(ctx, "b"); err != nil || got.SecretsErr != nil || string(got.Secrets) != `{"env":{"K":"new"}}` {
				t.Fatalf("after replacing: %+v %v", got, err)
			}
		})
	}
}

// TestReplicasMigrateAtOnce: replicas opening a fresh PostgreSQL
// database together all start; the migrations run once.
func TestReplicasMigrateAtOnce(t *testing.T) {
	t.Parallel()
	dsn, _ := postgresDSN(t)
	o := store.Options{Driver: store.Postgres, DSN: dsn, Key: testKey}
	const replicas = 20
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := store.Open(context.Background(), o)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
	// Each version once, every one of them.
	var applied, versions, newest int
	if err := rawDB(t, o).QueryRow(`SELECT COUNT(*), COUNT(DISTINCT version), MAX(version) FROM mcphost_schema`).Scan(&applied, &versions, &newest); err != nil ||
		applied != versions || applied != newest || newest < 4 {
		t.Fatalf("schema rows: %d for %d versions up to %d, %v", applied, versions, newest, err)
	}
}

func TestDescribeHidesPasswords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ driver, dsn, want string }{
		{store.Postgres, "postgres://m:hunter2@db:5432/x?sslmode=disable&password=hunter2", "PostgreSQL at db:5432/x"},
		{store.Postgres, "host=db user=m password=hunter2 dbname=x", "PostgreSQL"},
		{store.Postgres, "postgres:///x?host=/run/pg&password=hunter2", "PostgreSQL"},
		{store.SQLite, "/var/lib/mcphost.db", "SQLite file /var/lib/mcphost.db"},
	} {
		if got := store.Describe(c.driver, c.dsn); got != c.want || strings.Contains(got, "hunter2") {
			t.Errorf("Describe(%q) = %q, want %q", c.dsn, got, c.want)
		}
	}
}

func TestReopenKeepsServersAndSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o := store.Options{Driver: store.SQLite, DSN: filepath.Join(t.TempDir(), "m.db")}
	s, err := store.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, store.Server{Name: "a", Spec: []byte(`{"name":"a"}`)}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, o)
	if got, err := s.Server(ctx, "a"); err != nil || string(got.Spec) != `{"name":"a"}` {
		t.Fatalf("after reopening: %+v %v", got, err)
	}
	// A database from a newer mcphost is refused, not misread.
	db := rawDB(t, o)
	if _, err := db.Exec(`INSERT INTO mcphost_schema (version, applied) VALUES (99, 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Open(ctx, o); err == nil || !strings.Contains(err.Error(), "newer than this mcphost") {
		t.Fatalf("newer schema: %v", err)
	}
}

func TestBadOptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := store.Open(ctx, store.Options{Driver: "mysql"}); err == nil || !strings.Contains(err.Error(), "unknown driver") {
		t.Fatalf("unknown driver: %v", err)
	}
	if _, err := store.Open(ctx, store.Options{Driver: store.SQLite, DSN: filepath.Join(t.TempDir(), "x.db"), Key: []byte("short")}); err == nil || !strings.Contains(err.Error(), "must be 32") {
		t.Fatalf("short key: %v", err)
	}
	if _, err := store.Open(ctx, store.Options{Driver: store.SQLite, DSN: "/nonexistent/dir/x.db"}); err == nil {
		t.Fatal("a file in a missing directory opened")
	}
	for _, bad := range []string{"not base64!", "c2hvcnQ="} {
		if _, err := store.ParseKey(bad); err == nil {
			t.Fatalf("ParseKey(%q) passed", bad)
		}
	}
	if k, err := store.ParseKey("BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="); err != nil || !bytes.Equal(k, testKey) {
		t.Fatalf("ParseKey: %x %v", k, err)
	}
}

func rawDB(t *testing.T, o store.Options) *sql.DB {
	t.Helper()
	driver, dsn := "sqlite", o.DSN
	if o.Driver == store.Postgres {
		driver = "pgx"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestSQLiteFilesArePrivate: the database and its -wal and -shm files are
// readable by this user alone, whatever the umask, and a file left readable
// by others is narrowed when opened.
func TestSQLiteFilesArePrivate(t *testing.T) {
	// Not parallel, unlike the other tests: the umask is the process's.
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	ctx := context.Background()
	dsn := filepath.Join(t.TempDir(), "mcphost.db")
	s := open(t, store.Options{Driver: store.SQLite, DSN: dsn, Key: testKey})
	if err := s.KVSet(ctx, "qr", "k", []byte("a value in the WAL")); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for _, p := range []string{dsn, dsn + "-wal", dsn + "-shm"} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			if perm := fi.Mode().Perm(); perm != 0o600 {
				t.Errorf("%s: %s has mode %04o, want 0600", when, filepath.Base(p), perm)
			}
		}
	}
	check("a new database")
	for _, p := range []string{dsn, dsn + "-wal", dsn + "-shm"} {
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	open(t, store.Options{Driver: store.SQLite, DSN: dsn, Key: testKey})
	check("a database left 0644")
}

package store_test

import (
	"os"
	"testing"

	"github.com/mcphost-project/mcphost/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// postgresDSN is a fresh PostgreSQL database on a real server (pgtest
// skips the test when PostgreSQL is not installed, and fails it in CI).
func postgresDSN(t *testing.T) (string, bool) { return pgtest.NewDatabase(t), true }

package catalog

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// TestProblemsLoggedOnce: the same naming problems found by rebuild after
// rebuild (every reconnect) are warned about once; a new one is, and one
// that went away and came back is again.
func TestProblemsLoggedOnce(t *testing.T) {
	t.Parallel()
	var out testproc.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Warn})
	var c ConditionLog
	clash := Problem{Server: "a", Tool: "x", Err: errors.New("name clash")}
	long := Problem{Server: "b", Tool: "y", Err: errors.New("name too long")}
	for _, round := range [][]Problem{{clash}, {clash}, {clash, long}, {clash, long}, {long}, {clash, long}} {
		LogProblems(&c, log, "tool naming", round)
	}
	if n := strings.Count(out.String(), "name clash"); n != 2 {
		t.Errorf("the clash was warned about %d times, want 2 (first seen, and back after it went):\n%s", n, out.String())
	}
	if n := strings.Count(out.String(), "name too long"); n != 1 {
		t.Errorf("the long name was warned about %d times, want 1:\n%s", n, out.String())
	}
	if !c.Once("s\x00roots/list") || c.Once("s\x00roots/list") || !c.Once("t\x00roots/list") {
		t.Error("once does not say each key once")
	}
}

// TestManyProblemsOneWarning: many new problems of one server (duplicate
// resources of three servers) make one warning with their count, not a
// line each.
func TestManyProblemsOneWarning(t *testing.T) {
	t.Parallel()
	var out testproc.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Warn})
	var c ConditionLog
	var round []Problem
	for i := range 9 {
		round = append(round, Problem{Server: "b", Tool: "res" + string(rune('a'+i)), Err: errors.New("duplicate resource URI")})
	}
	round = append(round, Problem{Server: "c", Tool: "x", Err: errors.New("name clash")})
	LogProblems(&c, log, "prompts and resources", round)
	if n := strings.Count(out.String(), "[WARN]"); n != 2 || !strings.Contains(out.String(), "problems=9") {
		t.Errorf("want 2 warnings (b's 9 in one, c's), got %d:\n%s", n, out.String())
	}
}

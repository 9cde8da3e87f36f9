package catalog

import (
	"sync"

	"github.com/hashicorp/go-hclog"
)

// ConditionLog says each of a set of conditions (a naming problem, a
// resource conflict, a kind of refused request) once, and again only after
// it went away and came back: catalog rebuilds at every reconnect, and
// every server that comes up, find the same problems, and an operator
// reading the log wants them once.
type ConditionLog struct {
	mu   sync.Mutex
	last map[string]bool
}

// update makes keys the current conditions and returns, for each, whether
// it is new since the previous update.
func (c *ConditionLog) update(keys []string) []bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	fresh := make([]bool, len(keys))
	next := make(map[string]bool, len(keys))
	for i, k := range keys {
		fresh[i] = !c.last[k]
		next[k] = true
	}
	c.last = next
	return fresh
}

// Once reports whether key is new, adding it: for conditions that are
// seen one at a time and do not go away.
func (c *ConditionLog) Once(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last[key] {
		return false
	}
	if c.last == nil {
		c.last = make(map[string]bool)
	}
	c.last[key] = true
	return true
}

// LogProblems logs each problem at warn when it is new, else at debug.
func LogProblems(c *ConditionLog, log hclog.Logger, msg string, problems []Problem) {
	keys := make([]string, len(problems))
	for i, p := range problems {
		keys[i] = p.Server + "\x00" + p.Tool + "\x00" + p.Err.Error()
	}
	fresh := c.update(keys)
	// A server with many new problems at once (three servers that serve
	// the same resources) gets one warning with the count and the first;
	// each is at debug level.
	perServer := map[string]int{}
	for i, p := range problems {
		if fresh[i] {
			perServer[p.Server]++
		}
	}
	summarized := map[string]bool{}
	for i, p := range problems {
		args := []any{"server", p.Server, "item", p.Tool, "problem", p.Err}
		switch {
		case !fresh[i]:
			log.Debug(msg+" (still)", args...)
		case perServer[p.Server] <= maxProblemWarnings:
			log.Warn(msg, args...)
		default:
			if !summarized[p.Server] {
				summarized[p.Server] = true
				log.Warn(msg, "server", p.Server, "problems", perServer[p.Server], "first", p.Tool, "problem", p.Err,
					"more", "the log at debug level lists each")
			}
			log.Debug(msg, args...)
		}
	}
}

// maxProblemWarnings is how many new problems of one server are warned
// about one by one; more make one warning.
const maxProblemWarnings = 3

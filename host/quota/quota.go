// Package quota limits tools/calls per identity: calls per window and calls
// at once, for the callers, servers and tools a quota names. A Limiter
// holds one set of quotas and their counters in memory (replica-local);
// the gateway asks it once per call, after the call is resolved and before
// any policy runs, and builds the next Limiter from the last on reload, so
// that counters of unchanged quotas carry over.
//
// The package knows no MCP: the caller is a subject, an auth method and
// groups; the call a server and a tool name.
package quota

import (
	"fmt"
	"strings"
	"time"
)

// Kinds of limit, as refusals, metrics and the audit log name them.
const (
	KindCalls      = "calls"      // calls per window
	KindConcurrent = "concurrent" // calls at once
)

// How a quota's budget is shared (Quota.Per).
const (
	// PerSubject gives each identity its own budget (the default).
	PerSubject = "subject"
	// PerQuota gives every caller the quota matches one budget together.
	PerQuota = "quota"
)

// Bounds of a quota's numbers.
const (
	MaxCalls      = 1_000_000_000
	MaxConcurrent = 1_000_000
	MinWindow     = time.Second
	MaxWindow     = 7 * 24 * time.Hour
	// DefaultWindow is a quota's window when it sets calls and no window.
	DefaultWindow = time.Minute
)

// Quota is one limit: who it applies to, which calls it counts and how
// many it lets through. An empty list matches everything: a quota with no
// subjects and no groups applies to every caller, one with no servers and
// no tools to every call.
type Quota struct {
	Name string
	// Subjects and Groups pick the callers: a caller whose subject is in
	// Subjects, or who is in one of Groups.
	Subjects []string
	Groups   []string
	// Servers and Tools pick the calls: to one of Servers, of a tool
	// whose name at its server matches one of Tools (globs where "*"
	// matches any run of characters).
	Servers []string
	Tools   []string
	// Calls is how many calls each budget may make per Window (0: no
	// limit on calls); windows are fixed and start at multiples of Window
	// since the Unix epoch, so a "1m" window starts each minute.
	Calls  int
	Window time.Duration
	// Concurrent is how many calls each budget may have in flight at once
	// (0: no limit).
	Concurrent int
	// Per is PerSubject (each identity its own budget; callers without an
	// identity share one) or PerQuota ("": PerSubject).
	Per string
}

// Problem is one thing wrong with a Quota: the field, by its name in the
// config file and the admin API, and a sentence that names it.
type Problem struct {
	Field  string
	Detail string
}

func (p Problem) Error() string { return p.Detail }

// WithDefaults returns q with its window and per filled in.
func (q Quota) WithDefaults() Quota {
	if q.Calls > 0 && q.Window == 0 {
		q.Window = DefaultWindow
	}
	if q.Per == "" {
		q.Per = PerSubject
	}
	return q
}

// Check reports every problem of q (defaults applied first).
func (q Quota) Check() []Problem {
	q = q.WithDefaults()
	var ps []Problem
	add := func(field, format string, args ...any) {
		ps = append(ps, Problem{Field: field, Detail: fmt.Sprintf(format, args...)})
	}
	if err := CheckName(q.Name); err != nil {
		add("name", "%v", err)
	}
	if q.Calls == 0 && q.Concurrent == 0 {
		add("calls", "a quota limits calls per window (calls), calls at once (concurrent), or both, and this one sets neither")
	}
	if q.Calls < 0 || q.Calls > MaxCalls {
		add("calls", "calls must be a whole number from 1 to %d", MaxCalls)
	}
	if q.Concurrent < 0 || q.Concurrent > MaxConcurrent {
		add("concurrent", "concurrent must be a whole number from 1 to %d", MaxConcurrent)
	}
	switch {
	case q.Calls == 0 && q.Window != 0:
		add("window", "window is the window of calls, which this quota does not set; set calls or remove window")
	case q.Window != 0 && (q.Window < MinWindow || q.Window > MaxWindow):
		add("window", "window must be from %s to %s, got %s", MinWindow, MaxWindow, q.Window)
	case q.Window%time.Second != 0:
		add("window", "window must be whole seconds, got %s", q.Window)
	}
	if q.Per != PerSubject && q.Per != PerQuota {
		add("per", "per must be %q or %q, not %q", PerSubject, PerQuota, q.Per)
	}
	for field, list := range map[string][]string{"subjects": q.Subjects, "groups": q.Groups, "servers": q.Servers, "tools": q.Tools} {
		for _, s := range list {
			if s == "" {
				add(field, "%s holds an empty string, which matches nothing; remove it", field)
				break
			}
		}
	}
	return ps
}

// CheckName checks a quota's name: 1 to 64 letters, digits, '-', '_' and
// '.', as a URL path segment and a metric label take it unchanged.
func CheckName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("a quota's name is 1 to 64 characters, got %d", len(name))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("a quota's name is letters, digits, '-', '_' and '.'; %q has %q", name, r)
		}
	}
	return nil
}

// Describe says what q lets through, in the words a refusal uses.
func (q Quota) Describe(kind string) string {
	if kind == KindConcurrent {
		return fmt.Sprintf("%d calls at once", q.Concurrent)
	}
	return fmt.Sprintf("%d calls per %s", q.Calls, window(q.Window))
}

// window writes a window the way the config does: "1m", not "1m0s".
func window(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

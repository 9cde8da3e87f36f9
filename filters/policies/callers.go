package policies

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
)

// Configuration keys of a caller condition.
const (
	keySubjects       = "subjects"
	keyGroups         = "groups"
	keyExceptSubjects = "except_subjects"
	keyExceptGroups   = "except_groups"
)

// callerCondition says which callers a policy's rule applies to, from the
// identity authentication gave them (abi.Caller's Subject and Groups, ABI
// 1.3). allow, deny, modes, arguments and mentions read it. Configuration:
//
//	subjects        = "alice, bob"   # the rule applies only to these subjects...
//	groups          = "eng"          # ...or to callers in one of these groups
//	except_subjects = "carol"        # and never to these subjects
//	except_groups   = "admins"       # nor to callers in one of these groups
//
// With neither subjects nor groups the rule applies to every caller; the
// except keys win over both. Each key is a comma-separated string or a
// list of strings; matching is exact. A caller the rule does not apply to
// passes through the policy untouched.
type callerCondition struct {
	subjects, groups             []string
	exceptSubjects, exceptGroups []string
	set                          bool // some key was given
}

func (c *callerCondition) configure(cfg pdk.ConfigSource) error {
	for _, k := range []struct {
		key  string
		list *[]string
	}{
		{keySubjects, &c.subjects}, {keyGroups, &c.groups},
		{keyExceptSubjects, &c.exceptSubjects}, {keyExceptGroups, &c.exceptGroups},
	} {
		list, ok, err := callerNames(cfg, k.key)
		if err != nil {
			return err
		}
		*k.list = list
		c.set = c.set || ok
	}
	return nil
}

// callerNames reads one key of a caller condition: a comma-separated
// string ("alice, bob") or a list of strings (["alice", "bob"]). Entries
// are trimmed of white space; an empty entry, or no entry at all, is
// refused, so that a stray comma cannot widen or void a rule.
func callerNames(cfg pdk.ConfigSource, key string) ([]string, bool, error) {
	raw, ok := cfg.Lookup(key)
	if !ok {
		return nil, false, nil
	}
	var entries []string
	if err := json.Unmarshal([]byte(raw), &entries); err != nil {
		var other []any
		if json.Unmarshal([]byte(raw), &other) == nil {
			return nil, true, fmt.Errorf("config %q: want a comma-separated string or a list of strings, got %s", key, raw)
		}
		entries = strings.Split(raw, ",")
	}
	if len(entries) == 0 {
		return nil, true, fmt.Errorf("config %q: names no one; name at least one, or remove the key", key)
	}
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = strings.TrimSpace(e)
		if out[i] == "" {
			return nil, true, fmt.Errorf("config %q: entry %d of %d is empty; separate names with single commas, like \"alice, bob\"", key, i+1, len(entries))
		}
	}
	return out, true, nil
}

// dependsOnCaller reports whether the condition can tell callers apart,
// in which case the policy's answers depend on the caller (no
// IgnoresCaller hint).
func (c *callerCondition) dependsOnCaller() bool { return c.set }

// applies reports whether the rule applies to caller.
func (c *callerCondition) applies(caller *abi.Caller) bool {
	if !c.set {
		return true
	}
	if (len(c.subjects) > 0 || len(c.groups) > 0) && !callerMatches(caller, c.subjects, c.groups) {
		return false
	}
	return !callerMatches(caller, c.exceptSubjects, c.exceptGroups)
}

// callerMatches reports whether caller is one of subjects or in one of groups.
func callerMatches(caller *abi.Caller, subjects, groups []string) bool {
	if caller.Subject != "" && contains(subjects, caller.Subject) {
		return true
	}
	for _, g := range groups {
		if caller.InGroup(g) {
			return true
		}
	}
	return false
}

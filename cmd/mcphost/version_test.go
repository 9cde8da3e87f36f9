package main

import (
	"runtime/debug"
	"testing"
)

func TestBuildVersion(t *testing.T) {
	t.Parallel()
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name                    string
		bi                      *debug.BuildInfo
		version, commit         string // stamped with -X
		wantVersion, wantCommit string
	}{
		{"no build info", nil, "0.1.0", "", "0.1.0", "unknown"},
		{"release build stamps both", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("aaaa", "true")}, "1.2.0", "0123abcd", "1.2.0", "0123abcd"},
		{"go install at a tag", &debug.BuildInfo{Main: debug.Module{Version: "v1.3.0"}}, "0.1.0", "", "1.3.0", "unknown"},
		{"go install at a pseudo-version", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261128075300-5f8de9d0a1b2"}}, "0.1.0", "", "0.1.0", "unknown"},
		{"git checkout, clean", &debug.BuildInfo{Main: debug.Module{Version: "v1.3.1-0.20261128075300-5f8de9d0a1b2"}, Settings: vcs("5f8de9d0a1b2", "false")}, "0.1.0", "", "0.1.0", "5f8de9d0a1b2"},
		{"git checkout, changed", &debug.BuildInfo{Main: debug.Module{Version: "v1.3.0+dirty"}, Settings: vcs("5f8de9d0a1b2", "true")}, "0.1.0", "", "0.1.0", "5f8de9d0a1b2-dirty"},
		{"-buildvcs=false", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "0.1.0", "", "0.1.0", "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, c := buildVersion(tc.bi, tc.version, tc.commit)
			if v != tc.wantVersion || c != tc.wantCommit {
				t.Errorf("buildVersion = %q, %q; want %q, %q", v, c, tc.wantVersion, tc.wantCommit)
			}
		})
	}
}

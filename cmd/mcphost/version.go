package main

import (
	"runtime/debug"
	"strings"

	"github.com/mcphost-project/mcphost/internal/version"
)

// commit is the git commit mcphost was built from, stamped by the release
// build (.ci/release) with
//
//	-ldflags "-X main.commit=$(git rev-parse HEAD) -X github.com/mcphost-project/mcphost/internal/version.Version=1.2.0"
//
// Left empty, buildVersion takes what the Go toolchain recorded instead.
var commit string

// buildVersion is the version and commit that `mcphost version` prints, from
// what the release build stamped and, where it stamped nothing, from the
// build information the Go toolchain embeds (bi, nil when there is none):
//   - `go install github.com/mcphost-project/mcphost/cmd/mcphost@v1.2.0`
//     records the module version v1.2.0, which then stands for the version;
//   - a build in a git checkout with VCS stamping on (the default, unless
//     GOFLAGS has -buildvcs=false) records the revision, and whether the
//     work tree had changes ("-dirty").
//
// The commit is "unknown" when neither says.
func buildVersion(bi *debug.BuildInfo, stampedVersion, stampedCommit string) (version, rev string) {
	version, rev = stampedVersion, stampedCommit
	if bi == nil {
		if rev == "" {
			rev = "unknown"
		}
		return version, rev
	}
	// A module version that is an exact release tag: not "(devel)", not a
	// pseudo-version (v0.0.0-2026...-abcdef) nor one with "+dirty".
	if v := bi.Main.Version; rev == "" && strings.HasPrefix(v, "v") && !strings.ContainsAny(v, "-+") {
		version = strings.TrimPrefix(v, "v")
	}
	if rev == "" {
		var modified bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if rev != "" && modified {
			rev += "-dirty"
		}
	}
	if rev == "" {
		rev = "unknown"
	}
	return version, rev
}

// stampVersion sets version.Version (what upstreams, clients and traces are
// told) and commit from the build, once, before anything reads them.
func stampVersion() {
	bi, _ := debug.ReadBuildInfo()
	version.Version, commit = buildVersion(bi, version.Version, commit)
}

// Package startpages gives back the pages of mcphost's own binary that only
// the start-up used.
//
// The kernel maps an executable's pages as they are first touched, and maps
// the 64 KiB around each page it faults in (fault-around) when they are in
// the page cache. At start-up some 270 package initialisers, the config's
// decoding and the engine's construction touch code and read-only data all
// over the binary, so most of it ends up mapped, though serving uses a
// fraction of it. Release unmaps the binary's read-only mappings once
// serving has started: the pages stay in the page cache, and those that
// serving touches come back on their first use, as minor faults. See
// docs/RATIONALE.md ("The binary's pages after start-up").
package startpages

import "os"

// Env names the environment variable that turns Release off: set to "keep",
// the binary's pages stay mapped as start-up left them.
const Env = "MCPHOST_START_PAGES"

// Enabled reports whether Release does anything: on Linux, unless the
// environment says "keep".
func Enabled() bool {
	return supported && os.Getenv(Env) != "keep"
}

// Release unmaps the binary's read-only mappings (its code, read-only data
// and function tables) so that only the pages used from now on are
// resident. It returns the size of the mappings it released, 0 where it is
// not supported or turned off. The contents cannot change: the mappings are
// never written, and a page comes back from the file (the page cache) when
// it is next used.
func Release() (int64, error) {
	if !Enabled() {
		return 0, nil
	}
	return release()
}

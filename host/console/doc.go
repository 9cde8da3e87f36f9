// Package console is mcphost's web console: pages for the servers, the
// tool catalog as a caller sees it, the plugins, the recent calls of the
// audit log and the pins awaiting approval, served by the admin listener
// at / (host/admin mounts it). The pages are plain HTML, CSS and one
// small script, embedded in the binary: nothing to build, nothing fetched
// from elsewhere. They call the admin API with a session cookie that a
// login with an admin's API key starts. See docs/console.md.
package console

// Package assemver holds the tests of the semver tool plugin, which is
// written in AssemblyScript (assembly/) and committed built (semver.wasm);
// build.sh rebuilds it.
package assemver

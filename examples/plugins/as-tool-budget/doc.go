// Package astoolbudget holds tool-budget, an mcphost policy plugin written
// in AssemblyScript on the Extism AssemblyScript PDK (assembly/, built with
// npm; see README.md). There is no Go code to import: the package exists for
// its test, which builds the plugin with the pinned npm toolchain and runs it
// through the real mcphost plugin runtime, as the host would.
package astoolbudget

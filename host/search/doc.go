// Package search finds tools in a caller's view of the catalog, for
// exposure = "search" (tools/list then lists search_tools, describe_tools
// and call_tool instead of every tool).
//
// An Indexer follows the catalog: each version gets an immutable Index
// (BM25F over a tool's name split into words, its title, description,
// parameter names and descriptions and its server's name, stemmed with
// Snowball English), built from analyses kept across versions. A caller's
// view is applied at query time: a Scope ties the view's tools to the
// index's documents, and analyses on their own the tools whose text the
// view's policies changed. The package knows abi's tool type and the
// go-sdk's; not sessions, policies or the gateway.
package search

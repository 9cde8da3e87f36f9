package catalog

// Prefix modes for exposed names.
const (
	PrefixAlways = "always" // exposed name = server + separator + tool
	PrefixNever  = "never"  // names pass through; a clash is a config error
)

// What to do when two servers list the same resource URI (or templates that
// both match a URI being read).
const (
	ResourceConflictFirst = "first" // the first server in config order serves it; a warning is logged
	ResourceConflictError = "error" // neither serves it: reading it is an error naming both
)

// Defaults of ToolsConfig, applied by Config.WithDefaults.
const (
	DefaultSeparator     = "__"
	DefaultMaxNameLength = 64
)

// Exposures: how tools/list shows a caller's tools.
const (
	ExposureList   = "list"   // every tool (the default)
	ExposureSearch = "search" // search_tools, describe_tools, call_tool and the tools Always names (host/search)
	ExposureCode   = "code"   // run_code alone, whose scripts call the others (host/codemode)
)

// ToolsConfig controls how upstream tools are exposed.
type ToolsConfig struct {
	Separator     string
	MaxNameLength int
	Prefix        string // PrefixAlways or PrefixNever
	// Exposure is ExposureList ("" too), ExposureSearch or ExposureCode.
	// Under search and code every tool of a caller's view stays callable
	// by its name, listed or not.
	Exposure string
	// Always names the tools (exposed names, or path.Match patterns)
	// that a search exposure lists all the same.
	Always []string
}

// ResourcesConfig controls how upstream resources are merged. Resource URIs
// are never renamed.
type ResourcesConfig struct {
	Conflict string // ResourceConflictFirst (default) or ResourceConflictError
}

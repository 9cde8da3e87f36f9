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
	ExposureList = "list" // every tool (the default)
	ExposureCode = "code" // run_code alone, whose scripts call the others (host/codemode)
)

// ToolsConfig controls how upstream tools are exposed.
type ToolsConfig struct {
	Separator     string
	MaxNameLength int
	Prefix        string // PrefixAlways or PrefixNever
	// Exposure is ExposureList ("" too) or ExposureCode. Under code every
	// tool of a caller's view stays callable by its name, listed or not.
	Exposure string
}

// ResourcesConfig controls how upstream resources are merged. Resource URIs
// are never renamed.
type ResourcesConfig struct {
	Conflict string // ResourceConflictFirst (default) or ResourceConflictError
}

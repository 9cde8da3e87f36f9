package main

import "github.com/mcphost-project/mcphost/filters"

// builtinPolicy resolves "builtin:NAME" plugin sources to the policies
// shipped with mcphost, embedded in the binary (see docs/policies.md).
var builtinPolicy = filters.Builtin

// builtinNames are the names builtinPolicy resolves, for suggestions.
var builtinNames = filters.Names()

//go:build mcphost_extism

package plugins

// instanceMemory is not measured under the Extism go-sdk engine.
func instanceMemory(*instance) []byte { return nil }

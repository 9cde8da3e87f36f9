//go:build !mcphost_extism

package plugins

// instanceMemory is the guest's linear memory of in, as wazero holds it.
func instanceMemory(in *instance) []byte {
	mem := in.mod.Memory()
	if mem == nil {
		return nil
	}
	buf, _ := mem.Read(0, mem.Size())
	return buf
}

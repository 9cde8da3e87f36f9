// Package wasmtest assembles small WebAssembly modules by hand, for tests
// of the code that reads and rewrites them and of the runtime that runs
// them.
package wasmtest

import "bytes"

// Module assembles a module from sections (id, body) in the given order.
func Module(sections ...[]byte) []byte {
	b := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range sections {
		b = append(b, s[0])
		b = U32(b, uint32(len(s)-1))
		b = append(b, s[1:]...)
	}
	return b
}

// Section is a section with a vector body of n entries.
func Section(id byte, n int, entries ...[]byte) []byte {
	b := U32([]byte{id}, uint32(n))
	for _, e := range entries {
		b = append(b, e...)
	}
	return b
}

// Name is a name as a module encodes it: its length, then its bytes.
func Name(s string) []byte { return append(U32(nil, uint32(len(s))), s...) }

// Cat joins byte strings.
func Cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// Body is a function body: locals (raw declarations), then code.
func Body(locals []byte, code ...byte) []byte {
	b := append(append([]byte{}, locals...), code...)
	return append(U32(nil, uint32(len(b))), b...)
}

// U32 appends v as unsigned LEB128.
func U32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// CompileBombs are modules of a few dozen bytes that made wazero allocate
// for a declared count before reading it: 288 GiB for 2^32-1 code bodies
// (a fatal out of memory), 11.6 s and 1.6 GB to compile 2^26 locals.
var CompileBombs = []struct {
	Name, Wasm, Msg string // Msg: what the refusal says
}{
	{"code bodies", string(Module(Section(1, 1, []byte{0x60, 0, 0}), Section(3, 1, []byte{0}),
		Cat([]byte{10}, U32(nil, 0xFFFFFFFF), []byte{2, 0, 0x0B}))),
		"code section: 4294967295 function bodies declared in 3 bytes"},
	{"functions", string(Module(Section(1, 1, []byte{0x60, 0, 0}), Cat([]byte{3}, U32(nil, 0xFFFFFFF), []byte{0, 0, 0}),
		Section(10, 1, Body([]byte{0}, 0x0B)))),
		"function section: 268435455 functions declared in 3 bytes"},
	{"locals", string(Module(Section(1, 1, []byte{0x60, 0, 0}), Section(3, 1, []byte{0}),
		Section(10, 1, Body(Cat([]byte{1}, U32(nil, 1<<26), []byte{0x7F}), 0x0B)))),
		"code section: function body 0 declares more than 50000 locals"},
	{"function and code disagree", string(Module(Section(1, 1, []byte{0x60, 0, 0}), Section(3, 2, []byte{0}, []byte{0}),
		Section(10, 1, Body([]byte{0}, 0x0B)))),
		"function section declares 2 functions, code section 1 bodies"},
	{"element indices", string(Module(Section(1, 1, []byte{0x60, 0, 0}), Section(4, 1, []byte{0x70, 0, 1}),
		Cat([]byte{9}, []byte{1, 0, 0x41, 0, 0x0B}, U32(nil, 0xFFFFFFFF)))),
		"element section: 4294967295 element indices declared in 0 bytes"},
	{"data length", string(Module(Section(5, 1, []byte{0, 1}),
		Cat([]byte{11}, []byte{1, 0, 0x41, 0, 0x0B}, U32(nil, 0xFFFFFFFF)))),
		"data section: 4294967295 bytes declared, 0 left"},
	{"section past the end", "\x00asm\x01\x00\x00\x00\x01\xFF\xFF\xFF\xFF\x0F", "type section: size 4294967295, 0 bytes left in the file"},
	{"table import", string(Module(Section(2, 1, Cat(Name("env"), Name("t"), []byte{1, 0x70, 0, 1})))),
		"import section: import 0 is a table; the host provides none"},
	{"table too large", string(Module(Section(4, 1, Cat([]byte{0x70, 0}, U32(nil, 100_000_000))))),
		"table section: table 0 starts with 100000000 entries; the limit is 1048576"},
}

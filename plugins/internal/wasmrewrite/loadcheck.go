package wasmrewrite

// Load-time bounds: what a module may make the host allocate before any of
// its code runs, and what its tables may grow to.
//
// wazero's decoder allocates for a vector's declared count before it reads
// the entries: a 28-byte module whose code section declares 2^32-1 bodies
// asked for 288 GiB and killed the process ("fatal error: runtime: out of
// memory", which no recover catches), and a 29-byte module declaring 2^26
// locals in one function compiled for 11.6 s in 1.6 GB. Guest linear memory
// is capped (memory.go), but tables are not: table.grow appends 8 bytes per
// entry to a Go slice, so a guest could ask for 32 GiB, and a declared
// initial size is allocated at instantiation.
//
// So before anything else reads a module, checkModule walks its sections
// (a few microseconds, no allocation that its input sizes) and refuses it
// when a declared count cannot fit the bytes that follow it, the function
// and code sections disagree, a function declares more than
// maxFunctionLocals locals, a table starts above maxTableEntries entries or
// the module imports a table (the host exports none); it then rewrites
// every table's limits to a maximum of at most maxTableEntries, so
// table.grow past it returns -1, as the spec allows any table with a
// maximum to. Sections it does not know are left to wazero, which refuses
// them under mcphost's features.

import (
	"bytes"
	"errors"
	"fmt"
)

const (
	// maxTableEntries caps every table (8 MiB of references in wazero).
	// Toolchains size a guest's table to its address-taken functions: ~7400
	// in the 5.6 MB built-in module (Go wasip1), a few hundred to a few
	// thousand for Rust and AssemblyScript. A Go guest has one entry per
	// function, and a guest reaching 2^20 would be some 500 MB of code.
	maxTableEntries = 1 << 20
	// maxFunctionLocals caps the locals of one function: V8 and
	// SpiderMonkey refuse more than 50000, so no toolchain that targets the
	// web emits more; wazero compiled 2^26 for 11.6 s in 1.6 GB.
	maxFunctionLocals = 50000
)

// errModuleLimit is wrapped by every refusal of checkModule.
var errModuleLimit = errors.New("module exceeds a load limit")

func limitErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errModuleLimit, fmt.Sprintf(format, args...))
}

var sectionNames = [...]string{"custom", "type", "import", "function", "table", "memory", "global",
	"export", "start", "element", "code", "data", "data count"}

func sectionName(id byte) string {
	if int(id) < len(sectionNames) {
		return sectionNames[id]
	}
	return fmt.Sprintf("id %d", id)
}

// creader reads one section body for checkModule; errors name the section.
type creader struct {
	b    []byte
	pos  int
	name string
}

func (r *creader) fail(format string, args ...any) error {
	return limitErr("%s section: %s", r.name, fmt.Sprintf(format, args...))
}

// pastEnd marks a refusal of a count or size that the bytes left cannot
// hold, or of an entry cut by its section's end: wazero reads on past a
// section's end, so it would have allocated for what it read there before
// failing.
type pastEnd struct{ error }

func (e pastEnd) Unwrap() error { return e.error }

// overLimit marks a refusal of what is valid WebAssembly but above one of
// mcphost's limits (tables, locals).
type overLimit struct{ error }

func (e overLimit) Unwrap() error { return e.error }

func (r *creader) left() int { return len(r.b) - r.pos }

func (r *creader) byte() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, pastEnd{r.fail("unexpected end")}
	}
	r.pos++
	return r.b[r.pos-1], nil
}

func (r *creader) skip(n uint64) error {
	if n > uint64(r.left()) {
		return pastEnd{r.fail("%d bytes declared, %d left", n, r.left())}
	}
	r.pos += int(n)
	return nil
}

// leb reads an LEB128 number of at most maxBytes bytes, unsigned.
func (r *creader) leb(maxBytes int) (uint64, error) {
	var v uint64
	for i := 0; i < maxBytes; i++ {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		v |= uint64(c&0x7F) << (7 * i)
		if c&0x80 == 0 {
			return v, nil
		}
	}
	return 0, r.fail("LEB128 too long at %d", r.pos)
}

func (r *creader) u32() (uint32, error) {
	v, err := r.leb(5)
	return uint32(v), err
}

// count reads a vector's length and checks that count entries of at least
// min bytes each fit the rest of the section.
func (r *creader) count(what string, min int) (uint32, error) {
	n, err := r.u32()
	if err != nil {
		return 0, err
	}
	if uint64(n)*uint64(min) > uint64(r.left()) {
		return 0, pastEnd{r.fail("%d %s declared in %d bytes", n, what, r.left())}
	}
	return n, nil
}

// constExpr skips a constant expression, knowing only the instructions
// wazero accepts in one.
func (r *creader) constExpr() error {
	for {
		op, err := r.byte()
		if err != nil {
			return err
		}
		switch op {
		case 0x0B: // end
			return nil
		case 0x41, 0x23, 0xD2, 0xD0: // i32.const, global.get, ref.func, ref.null heaptype
			_, err = r.leb(5)
		case 0x42: // i64.const
			_, err = r.leb(10)
		case 0x43:
			err = r.skip(4)
		case 0x44:
			err = r.skip(8)
		case 0x6A, 0x6B, 0x6C, 0x7C, 0x7D, 0x7E: // extended-const arithmetic
		case 0xFD: // v128.const
			var sub uint64
			if sub, err = r.leb(5); err == nil {
				if sub != 12 {
					return r.fail("opcode 0xFD %d in a constant expression", sub)
				}
				err = r.skip(16)
			}
		default:
			return r.fail("opcode 0x%02x in a constant expression", op)
		}
		if err != nil {
			return err
		}
	}
}

// checkModule returns wasm, or a copy with its tables' maxima capped at
// maxTableEntries, or an error wrapping errModuleLimit. A module without
// the wasm 1 header is returned as it is, for wazero to describe.
func Check(wasm []byte) ([]byte, error) {
	if !bytes.HasPrefix(wasm, Header) {
		return wasm, nil
	}
	top := &creader{b: wasm, pos: 8, name: "module"}
	var (
		funcs, codes uint32
		tableSec     sectionSpan // where the table section is in wasm
		tables       []tableLimits
	)
	for top.left() > 0 {
		hdr := top.pos
		id, _ := top.byte()
		top.name = sectionName(id) + " header"
		size, err := top.u32()
		if err != nil {
			return nil, err
		}
		if uint64(size) > uint64(top.left()) {
			return nil, pastEnd{limitErr("%s section: size %d, %d bytes left in the file (the file is cut short, or not a Wasm module)", sectionName(id), size, top.left())}
		}
		r := &creader{b: wasm[:top.pos+int(size)], pos: top.pos, name: sectionName(id)}
		span := sectionSpan{header: hdr, body: top.pos, end: top.pos + int(size)}
		top.pos += int(size)
		switch id {
		case 0:
			err = checkNames(r)
		case 1: // type: 0x60 params results
			n, err := r.count("types", 3)
			if err != nil {
				return nil, err
			}
			for range n {
				if _, err := r.byte(); err != nil {
					return nil, err
				}
				for range 2 {
					k, err := r.count("value types", 1)
					if err != nil {
						return nil, err
					}
					_ = r.skip(uint64(k))
				}
			}
		case 2: // import: module name, field name, kind, description
			n, err := r.count("imports", 4)
			if err != nil {
				return nil, err
			}
			for i := range n {
				for range 2 {
					k, err := r.u32()
					if err != nil {
						return nil, err
					}
					if err := r.skip(uint64(k)); err != nil {
						return nil, err
					}
				}
				kind, err := r.byte()
				if err != nil {
					return nil, err
				}
				switch kind {
				case 0: // function: type index
					_, err = r.u32()
				case 1:
					return nil, overLimit{r.fail("import %d is a table; the host provides none", i)}
				case 2: // memory: limits
					var flags byte
					if flags, err = r.byte(); err == nil {
						if _, err = r.leb(10); err == nil && flags&1 != 0 {
							_, err = r.leb(10)
						}
					}
				case 3: // global: value type, mutability
					err = r.skip(2)
				default:
					return nil, r.fail("import %d has kind %d", i, kind)
				}
				if err != nil {
					return nil, err
				}
			}
		case 3:
			funcs, err = r.count("functions", 1)
		case 4: // table: reftype limits
			tableSec = span
			n, err := r.count("tables", 3)
			if err != nil {
				return nil, err
			}
			for i := range n {
				if _, err := r.byte(); err != nil {
					return nil, err
				}
				at := r.pos
				flags, err := r.byte()
				if err != nil {
					return nil, err
				}
				if flags > 1 {
					return nil, r.fail("table %d has limits flags 0x%02x", i, flags)
				}
				initial, err := r.u32()
				if err != nil {
					return nil, err
				}
				if initial > maxTableEntries {
					return nil, overLimit{r.fail("table %d starts with %d entries; the limit is %d", i, initial, maxTableEntries)}
				}
				t := tableLimits{at: at, initial: initial, max: maxTableEntries}
				if flags == 1 {
					m, err := r.u32()
					if err != nil {
						return nil, err
					}
					t.max = min(m, maxTableEntries)
				}
				t.end = r.pos
				tables = append(tables, t)
			}
		case 5:
			_, err = r.count("memories", 2)
		case 6:
			_, err = r.count("globals", 3)
		case 7:
			_, err = r.count("exports", 3)
		case 9:
			err = checkElements(r)
		case 10:
			codes, err = checkCode(r)
		case 11:
			err = checkData(r)
		}
		if err != nil {
			return nil, err
		}
	}
	if funcs != codes {
		return nil, limitErr("function section declares %d functions, code section %d bodies", funcs, codes)
	}
	if len(tables) == 0 {
		return wasm, nil
	}
	return capTables(wasm, tableSec, tables), nil
}

// sectionSpan is where one section is in a module: its id byte, its body,
// and the end of its body.
type sectionSpan struct{ header, body, end int }

// tableLimits is one table's limits as read (from flags at at, to end)
// and the maximum it gets: the declared one, at most maxTableEntries.
type tableLimits struct {
	at, end      int
	initial, max uint32
}

// capTables rewrites the limits of the tables of section sec to their
// capped maxima. The section's size is re-encoded; nothing else moves.
func capTables(wasm []byte, sec sectionSpan, tables []tableLimits) []byte {
	var body []byte
	copied := sec.body
	for _, t := range tables {
		body = append(body, wasm[copied:t.at]...)
		body = appendU32(appendU32(append(body, 1), t.initial), t.max)
		copied = t.end
	}
	body = append(body, wasm[copied:sec.end]...)
	out := make([]byte, 0, len(wasm)+8*len(tables))
	out = append(out, wasm[:sec.header]...)
	out = appendU32(append(out, 4), uint32(len(body)))
	out = append(out, body...)
	return append(out, wasm[sec.end:]...)
}

// checkElements checks every segment's vector against the bytes left.
func checkElements(r *creader) error {
	n, err := r.count("element segments", 2)
	if err != nil {
		return err
	}
	for i := range n {
		flags, err := r.u32()
		if err != nil {
			return err
		}
		if flags > 7 {
			return r.fail("element segment %d has flags %d", i, flags)
		}
		if flags&2 != 0 && flags&1 == 0 { // active with a table index
			if _, err := r.u32(); err != nil {
				return err
			}
		}
		if flags&1 == 0 { // active: offset
			if err := r.constExpr(); err != nil {
				return err
			}
		}
		if flags&3 != 0 { // elemkind or reftype
			if _, err := r.byte(); err != nil {
				return err
			}
		}
		if flags&4 == 0 { // function indices
			k, err := r.count("element indices", 1)
			if err != nil {
				return err
			}
			for range k {
				if _, err := r.u32(); err != nil {
					return err
				}
			}
			continue
		}
		k, err := r.count("element expressions", 2)
		if err != nil {
			return err
		}
		for range k {
			if err := r.constExpr(); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkData checks every segment's length against the bytes left.
func checkData(r *creader) error {
	n, err := r.count("data segments", 2)
	if err != nil {
		return err
	}
	for i := range n {
		flags, err := r.u32()
		if err != nil {
			return err
		}
		switch flags {
		case 0:
			err = r.constExpr()
		case 1:
		case 2:
			if _, err = r.u32(); err == nil {
				err = r.constExpr()
			}
		default:
			return r.fail("data segment %d has flags %d", i, flags)
		}
		if err != nil {
			return err
		}
		k, err := r.u32()
		if err != nil {
			return err
		}
		if err := r.skip(uint64(k)); err != nil {
			return err
		}
	}
	return nil
}

// checkCode checks every body's size and locals, and returns the count.
func checkCode(r *creader) (uint32, error) {
	n, err := r.count("function bodies", 3)
	if err != nil {
		return 0, err
	}
	for i := range n {
		size, err := r.u32()
		if err != nil {
			return 0, err
		}
		end := r.pos + int(min(uint64(size), uint64(r.left())))
		if err := r.skip(uint64(size)); err != nil {
			return 0, err
		}
		b := &creader{b: r.b[:end], pos: end - int(size), name: r.name}
		decls, err := b.count("local declarations", 2)
		if err != nil {
			return 0, err
		}
		var locals uint64
		for range decls {
			k, err := b.u32()
			if err != nil {
				return 0, err
			}
			if locals += uint64(k); locals > maxFunctionLocals {
				return 0, overLimit{b.fail("function body %d declares more than %d locals", i, maxFunctionLocals)}
			}
			if _, err := b.byte(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

// checkNames checks the counts of the name section, which wazero decodes
// (and allocates for) whatever its configuration, as wazero reads them:
// each function or local name takes at least two bytes. Other custom
// sections, and a malformed name section, are left to wazero.
func checkNames(r *creader) error {
	n, err := r.u32()
	if err != nil || n > uint32(r.left()) || string(r.b[r.pos:r.pos+int(n)]) != "name" {
		return nil
	}
	r.pos += int(n)
	r.name = "name"
	for r.left() > 0 {
		id, _ := r.byte()
		size, err := r.u32()
		if err != nil {
			return nil
		}
		var k uint32
		switch id {
		case 0:
			if k, err = r.u32(); err == nil {
				err = r.skip(uint64(k))
			}
		case 1, 2:
			if k, err = r.count("names", 2); err != nil {
				break
			}
			for range k {
				if _, err = r.u32(); err != nil {
					break
				}
				if id == 2 {
					var locals uint32
					if locals, err = r.count("local names", 2); err != nil {
						break
					}
					for range locals {
						if _, err = r.u32(); err == nil {
							err = r.skipName()
						}
						if err != nil {
							break
						}
					}
				} else {
					err = r.skipName()
				}
				if err != nil {
					break
				}
			}
		default:
			err = r.skip(uint64(size))
		}
		if err != nil {
			if _, ok := err.(pastEnd); ok && id != 0 {
				return err
			}
			return nil
		}
	}
	return nil
}

// skipName skips a length-prefixed name.
func (r *creader) skipName() error {
	k, err := r.u32()
	if err == nil {
		err = r.skip(uint64(k))
	}
	return err
}

// Package wasmrewrite reads and rewrites a plugin's WebAssembly binary
// before it is compiled: Check refuses modules whose declared sizes would
// exhaust the host and caps their tables (loadcheck.go), CoalesceData
// merges data segments (dataseg.go), and Instrument inserts the countdown
// that keeps guests stoppable (instrument.go). It knows nothing of
// plugins, pools or the ABI beyond the one host import it calls.
package wasmrewrite

// Instrumentation: the cheap way to keep guests stoppable.
//
// wazero's WithCloseOnContextDone makes compiled code call a trampoline at
// every loop header to check whether the module was closed, and Go-built
// wasm passes a loop header at almost every branch: listings ran four times
// slower with it. It does not check at function entries either, so a guest
// that recurses without a loop (fib(60) by naive recursion, 2^42 calls) was
// never stopped. Instead, at load, instrument rewrites the guest's code
// section so that every loop body, and the entry of every function that
// calls another, starts with a countdown on a new mutable i32 global; when
// the counter is zero (every loopCheckEvery loop iterations and calls,
// summed over the instance) the guest resets it and calls an import it
// already has, extism:host/env length (i64) -> i64, with the sentinel
// argument loopCheckArg, dropping the result. The host's length (extismhost/kernel.go)
// recognises the sentinel and, when the call's context is done, closes the
// module with the exit code wazero itself would use, so callers see the
// same ErrTimeout and the instance is thrown away. Such a module is
// compiled with WithCloseOnContextDone(false).
//
// Every cycle of control passes a check: a loop's back edge enters its body,
// and a cycle of calls (recursion, direct or through a table) passes the
// entry of a function that calls. Bulk instructions (memory.fill, .copy,
// .init, table.fill, .copy, .init, .grow) do work in proportion to their
// size operand, not their code: a loop filling 33 MB per iteration ran
// 13.5 s past a 200 ms timeout when it counted one per iteration. So each
// counts 1, plus 1 per KiB of memory or 128 table entries, before it runs:
// the size, on top of the stack, is parked in a second appended global
// while the counter drops by that much, and when the counter would go
// below zero the check runs first, so a call past its deadline starts no
// large instruction. What runs between two checks is then at most
// loopCheckEvery counts (so at most 16 MiB of bulk work, or one larger
// instruction just after a check) plus code bounded by its size, not by
// its input: straight-line code and calls to leaf functions. Host imports
// that wait (http_request, WASI's poll_oneoff) watch the call's context
// themselves (extismhost: kernel.go, guard.go).
//
// No index moves: no import is added (the check calls an existing one) and
// the two globals are appended after every existing global, imported or
// not.
//
// The rewriter is strict. A module it does not fully understand (an unknown
// section or opcode, SIMD, atomics, exceptions, tail calls, GC types,
// multi-memory, a malformed or oddly ordered binary, no suitable import) is
// refused, and the caller compiles the original with
// WithCloseOnContextDone(true) for its loops and a function listener that
// checks the context at every function entry (extismhost/guard.go): slower, never
// unbounded.

import (
	"bytes"
	"errors"
	"fmt"
)

// Header is the start of every WebAssembly binary module: the magic number
// "\0asm" and version 1.
var Header = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}

const (
	// loopCheckEvery is how many loop iterations and calls of non-leaf
	// functions pass between two checks.
	loopCheckEvery = 1 << 14
	// loopCheckArg is the length argument that means "check the context".
	// It is never a block offset: the kernel's memory is capped far below.
	LoopCheckArg = ^uint64(0)
	// loopCheckModule is the module of the imports a check may call.
	loopCheckModule = "extism:host/env"
	// bulkMemShift: a memory bulk instruction counts one more per 1 KiB.
	// wazero fills and copies at 10 to 40 GB/s on a 2-core test machine,
	// 1 KiB in 25 to 100 ns, so loopCheckEvery counts of bulk work are
	// 16 MiB, about a millisecond, and a guest copying only large blocks
	// asks the host (one call) once per 16 MiB: no measurable cost. A
	// count per 64 bytes would tighten the bound to 1 MiB for no gain that
	// matters against a timeout in milliseconds; one per 64 KiB would let
	// 1 GiB, a tenth of a second, pass between checks.
	bulkMemShift = 10
	// bulkTableShift: a table bulk instruction counts one more per 128
	// entries, 1 KiB of references in wazero (8 bytes each).
	bulkTableShift = 7
)

// loopCheckImports are the imports a check may call: the host treats
// loopCheckArg specially in both, and both have the signature (i64) -> i64.
var loopCheckImports = map[string]bool{"length": true, "length_unsafe": true}

var errNotInstrumentable = errors.New("module not instrumentable")

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errNotInstrumentable, fmt.Sprintf(format, args...))
}

// Value types the rewriter accepts: numbers, v128 (in signatures only:
// SIMD instructions are refused), funcref, externref.
func isValType(b byte) bool {
	switch b {
	case 0x7F, 0x7E, 0x7D, 0x7C, 0x7B, 0x70, 0x6F:
		return true
	}
	return false
}

// wreader reads a wasm binary; every read checks bounds.
type wreader struct {
	b   []byte
	pos int
}

func (r *wreader) eof() bool { return r.pos >= len(r.b) }

func (r *wreader) byte() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, refuse("unexpected end at %d", r.pos)
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

func (r *wreader) bytes(n uint64) ([]byte, error) {
	if n > uint64(len(r.b)-r.pos) {
		return nil, refuse("unexpected end at %d (want %d bytes)", r.pos, n)
	}
	s := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return s, nil
}

// leb reads an LEB128 number of at most bits bits and returns it raw
// (unsigned, or sign-extended when signed). Overlong encodings and set
// unused bits are refused, so the length read is the only one a validating
// decoder can read.
func (r *wreader) leb(bits uint, signed bool) (uint64, error) {
	var v uint64
	var shift uint
	maxBytes := int((bits + 6) / 7)
	for i := 0; ; i++ {
		if i >= maxBytes {
			return 0, refuse("LEB128 too long at %d", r.pos)
		}
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		v |= uint64(c&0x7F) << shift
		shift += 7
		if c&0x80 != 0 {
			continue
		}
		if i == maxBytes-1 {
			// The last byte may only carry the remaining bits (and, signed,
			// their sign extension).
			rem := bits - 7*uint(maxBytes-1) // bits left for this byte
			payload := c & 0x7F
			if signed {
				high := payload >> (rem - 1) // sign bit and the unused bits
				if high != 0 && high != (0x7F>>(rem-1)) {
					return 0, refuse("LEB128 unused bits set at %d", r.pos)
				}
			} else if payload>>rem != 0 {
				return 0, refuse("LEB128 unused bits set at %d", r.pos)
			}
		}
		if signed && shift < 64 && c&0x40 != 0 {
			v |= ^uint64(0) << shift
		}
		return v, nil
	}
}

func (r *wreader) u32() (uint32, error) {
	v, err := r.leb(32, false)
	return uint32(v), err
}

// name reads a length-prefixed string.
func (r *wreader) name() (string, error) {
	n, err := r.u32()
	if err != nil {
		return "", err
	}
	b, err := r.bytes(uint64(n))
	return string(b), err
}

func (r *wreader) valType() error {
	c, err := r.byte()
	if err != nil {
		return err
	}
	if !isValType(c) {
		return refuse("value type 0x%02x", c)
	}
	return nil
}

// limits skips table or memory limits. Memory64 and unknown flags are
// refused; shared memories are accepted (atomics are refused in code).
func (r *wreader) limits() error {
	flags, err := r.byte()
	if err != nil {
		return err
	}
	if flags > 3 {
		return refuse("limits flags 0x%02x", flags)
	}
	if _, err := r.u32(); err != nil {
		return err
	}
	if flags&1 != 0 {
		if _, err := r.u32(); err != nil {
			return err
		}
	}
	return nil
}

// tableType reads a table type: funcref or externref, then its limits.
func (r *wreader) tableType() error {
	c, err := r.byte()
	if err != nil {
		return err
	}
	if c != 0x70 && c != 0x6F {
		return refuse("table type 0x%02x", c)
	}
	return r.limits()
}

func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendS32(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// sectionRank orders the non-custom sections as the spec requires. The tag
// section (13) is absent: exceptions are refused.
var sectionRank = map[byte]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7, 8: 8, 9: 9, 12: 10, 10: 11, 11: 12}

const globalRank = 6

type section struct {
	id   byte
	body []byte
}

// instrument returns wasm with every loop body (when loops is set), the
// entry of every function that calls, and every bulk instruction counting
// down to a context check, or an error wrapping errNotInstrumentable when
// the module must instead run guarded by wazero (extismhost/guard.go). Without loops,
// for a module whose loops wazero checks (RuntimeOptions.CloseOnContextDone),
// function entries and bulk instructions still count: a recursion that
// fills memory at every call passes no loop header.
func Instrument(wasm []byte, loops bool) ([]byte, error) {
	r := &wreader{b: wasm}
	hdr, err := r.bytes(8)
	if err != nil || !bytes.Equal(hdr, Header) {
		return nil, refuse("not a wasm 1 binary")
	}
	var (
		sections   []section
		lastRank   int
		types      [][2][]byte // params, results
		checkFunc  = -1
		funcs      uint32 // imported functions
		globals    uint32 // imported globals
		ownGlobals uint32
		codeIdx    = -1
	)
	for !r.eof() {
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		body, err := r.bytes(uint64(size))
		if err != nil {
			return nil, err
		}
		if id != 0 {
			rank, ok := sectionRank[id]
			if !ok {
				return nil, refuse("section id %d", id)
			}
			if rank <= lastRank {
				return nil, refuse("section %d out of order", id)
			}
			lastRank = rank
		}
		s := &wreader{b: body}
		switch id {
		case 0:
			if _, err := s.name(); err != nil {
				return nil, err
			}
			s.pos = len(body)
		case 1:
			if types, err = readTypes(s); err != nil {
				return nil, err
			}
		case 2:
			n, err := s.u32()
			if err != nil {
				return nil, err
			}
			for range n {
				mod, err := s.name()
				if err != nil {
					return nil, err
				}
				field, err := s.name()
				if err != nil {
					return nil, err
				}
				kind, err := s.byte()
				if err != nil {
					return nil, err
				}
				switch kind {
				case 0:
					ti, err := s.u32()
					if err != nil {
						return nil, err
					}
					if checkFunc < 0 && mod == loopCheckModule && loopCheckImports[field] && int(ti) < len(types) &&
						string(types[ti][0]) == "\x7E" && string(types[ti][1]) == "\x7E" {
						checkFunc = int(funcs)
					}
					funcs++
				case 1:
					if err := s.tableType(); err != nil {
						return nil, err
					}
				case 2:
					if err := s.limits(); err != nil {
						return nil, err
					}
				case 3:
					if err := s.valType(); err != nil {
						return nil, err
					}
					mut, err := s.byte()
					if err != nil {
						return nil, err
					}
					if mut > 1 {
						return nil, refuse("global mutability 0x%02x", mut)
					}
					globals++
				default:
					return nil, refuse("import kind %d", kind)
				}
			}
		case 4:
			n, err := s.u32()
			if err != nil {
				return nil, err
			}
			for range n {
				if err := s.tableType(); err != nil {
					return nil, err
				}
			}
		case 5:
			n, err := s.u32()
			if err != nil {
				return nil, err
			}
			for range n {
				if err := s.limits(); err != nil {
					return nil, err
				}
			}
		case 6:
			if ownGlobals, err = s.u32(); err != nil {
				return nil, err
			}
			s.pos = len(body) // the entries are kept as they are
		case 7:
			// An export of the new global's index would be invalid as
			// written but valid after the rewrite: refuse.
			n, err := s.u32()
			if err != nil {
				return nil, err
			}
			for range n {
				if _, err := s.name(); err != nil {
					return nil, err
				}
				kind, err := s.byte()
				if err != nil {
					return nil, err
				}
				idx, err := s.u32()
				if err != nil {
					return nil, err
				}
				if kind == 3 && uint64(idx) >= uint64(globals)+uint64(ownGlobals) {
					return nil, refuse("export of global %d", idx)
				}
			}
		case 10:
			codeIdx = len(sections)
			s.pos = len(body)
		default:
			s.pos = len(body) // kept as they are
		}
		if !s.eof() {
			return nil, refuse("section %d has trailing bytes", id)
		}
		sections = append(sections, section{id: id, body: body})
	}
	if checkFunc < 0 {
		return nil, refuse("no %s length import of type (i64) -> i64", loopCheckModule)
	}
	if uint64(globals)+uint64(ownGlobals) >= 1<<31 {
		return nil, refuse("too many globals")
	}
	rw := newRewriter(globals+ownGlobals, uint32(checkFunc), len(types), loops)

	out := make([]byte, 0, len(wasm)+len(wasm)/8+64)
	out = append(out, wasm[:8]...)
	// The counter $n, starting at loopCheckEvery, and the scratch $size.
	newGlobals := appendS32([]byte{0x7F, 0x01, 0x41}, loopCheckEvery)
	newGlobals = append(newGlobals, 0x0B, 0x7F, 0x01, 0x41, 0x00, 0x0B)
	emit := func(id byte, body []byte) {
		out = append(out, id)
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	placed := false
	for i, s := range sections {
		if !placed && s.id != 0 && sectionRank[s.id] > globalRank {
			emit(6, append(appendU32(nil, 2), newGlobals...))
			placed = true
		}
		switch {
		case s.id == 6:
			body := appendU32(nil, ownGlobals+2)
			gr := &wreader{b: s.body}
			_, _ = gr.u32()
			body = append(body, s.body[gr.pos:]...)
			emit(6, append(body, newGlobals...))
			placed = true
		case i == codeIdx:
			body, err := rw.code(s.body)
			if err != nil {
				return nil, err
			}
			if uint64(len(body)) >= 1<<32 {
				return nil, refuse("code section too large")
			}
			emit(10, body)
		default:
			emit(s.id, s.body)
		}
	}
	if !placed {
		emit(6, append(appendU32(nil, 2), newGlobals...))
	}
	return out, nil
}

func readTypes(s *wreader) ([][2][]byte, error) {
	n, err := s.u32()
	if err != nil {
		return nil, err
	}
	types := make([][2][]byte, 0, min(n, 1<<16))
	for range n {
		form, err := s.byte()
		if err != nil {
			return nil, err
		}
		if form != 0x60 {
			return nil, refuse("type form 0x%02x", form)
		}
		var ft [2][]byte
		for j := range ft {
			k, err := s.u32()
			if err != nil {
				return nil, err
			}
			start := s.pos
			for range k {
				if err := s.valType(); err != nil {
					return nil, err
				}
			}
			ft[j] = s.b[start:s.pos]
		}
		types = append(types, ft)
	}
	return types, nil
}

// rewriter rewrites the code section of one module.
type rewriter struct {
	ntypes int
	global uint32 // the counter $n; global+1 is the scratch $size
	loops  bool   // count loop bodies, not only function entries

	// check counts one and asks the host when the counter is out:
	//	global.get $n; i32.eqz
	//	if; i64.const -1; call $length; drop; i32.const N; global.set $n; end
	//	global.get $n; i32.const 1; i32.sub; global.set $n
	check []byte
	// bulkMem and bulkTable go before a bulk instruction, whose size is on
	// top of the stack, and count it by that size:
	//	global.set $size
	//	global.get $n; global.get $size; i32.const shift; i32.shr_u; i32.sub
	//	i32.const 1; i32.sub; global.set $n
	//	global.get $n; i32.const 0; i32.lt_s
	//	if; i64.const -1; call $length; drop; i32.const N; global.set $n; end
	//	global.get $size
	// The counter stays within [0, N] for check: at most 2^25+1 is taken
	// from at most N, with no overflow. The instruction sees the same
	// operand of the same type: an i32, as the rewriter refuses memory64
	// and table64, and a module whose operand is not an i32 is invalid
	// before and after.
	bulkMem, bulkTable []byte

	inserts []insert // scratch, reused from one function to the next
}

// insert is code to add before offset at of a function's code.
type insert struct {
	at   int
	code []byte
}

func newRewriter(global, checkFunc uint32, ntypes int, loops bool) *rewriter {
	rw := &rewriter{ntypes: ntypes, global: global, loops: loops}
	n, size := global, global+1
	// ask calls the host and resets the counter; it ends the if.
	ask := func(b []byte) []byte {
		b = append(b, 0x04, 0x40, 0x42, 0x7F)
		b = appendU32(append(b, 0x10), checkFunc)
		b = append(b, 0x1A)
		b = appendS32(append(b, 0x41), loopCheckEvery)
		b = appendU32(append(b, 0x24), n)
		return append(b, 0x0B)
	}
	c := appendU32([]byte{0x23}, n)
	c = ask(append(c, 0x45))
	c = appendU32(append(c, 0x23), n)
	c = append(c, 0x41, 0x01, 0x6B)
	rw.check = appendU32(append(c, 0x24), n)
	bulk := func(shift byte) []byte {
		b := appendU32([]byte{0x24}, size)
		b = appendU32(append(b, 0x23), n)
		b = appendU32(append(b, 0x23), size)
		b = append(b, 0x41, shift, 0x76, 0x6B, 0x41, 0x01, 0x6B)
		b = appendU32(append(b, 0x24), n)
		b = appendU32(append(b, 0x23), n)
		b = ask(append(b, 0x41, 0x00, 0x48))
		return appendU32(append(b, 0x23), size)
	}
	rw.bulkMem, rw.bulkTable = bulk(bulkMemShift), bulk(bulkTableShift)
	return rw
}

// code rewrites a code section body.
func (rw *rewriter) code(body []byte) ([]byte, error) {
	r := &wreader{b: body}
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(body)+len(body)/8)
	out = appendU32(out, n)
	var fn []byte
	for range n {
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		code, err := r.bytes(uint64(size))
		if err != nil {
			return nil, err
		}
		if fn, err = rw.function(fn[:0], code); err != nil {
			return nil, err
		}
		if uint64(len(fn)) >= 1<<32 {
			return nil, refuse("function too large")
		}
		out = appendU32(out, uint32(len(fn)))
		out = append(out, fn...)
	}
	if !r.eof() {
		return nil, refuse("code section has trailing bytes")
	}
	return out, nil
}

// function appends to out the function body code (locals and expression)
// with check inserted at the start of every loop body (when loops) and,
// if the function calls another, at its entry, and the bulk counts before
// every bulk instruction. Every instruction is decoded; the control
// nesting must close exactly at the body's end. No instruction may name
// the counter or the scratch global: the guest would then be invalid as
// written, yet valid rewritten and able to defeat the countdown.
func (rw *rewriter) function(out, code []byte) ([]byte, error) {
	fail := func(err error) ([]byte, error) { return nil, err }
	rw.inserts = rw.inserts[:0]
	ntypes, global := rw.ntypes, rw.global
	r := &wreader{b: code}
	nl, err := r.u32()
	if err != nil {
		return fail(err)
	}
	for range nl {
		if _, err := r.u32(); err != nil {
			return fail(err)
		}
		if err := r.valType(); err != nil {
			return fail(err)
		}
	}
	entry := r.pos
	calls := false
	depth := 1 // the function body's own block
	for depth > 0 {
		at := r.pos
		op, err := r.byte()
		if err != nil {
			return fail(err)
		}
		switch {
		case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if
			bt, err := r.leb(33, true)
			if err != nil {
				return fail(err)
			}
			switch int64(bt) {
			case -64, -1, -2, -3, -4, -5, -16, -17: // empty or one value type
			default:
				if int64(bt) < 0 || int64(bt) >= int64(ntypes) {
					return fail(refuse("block type %d", int64(bt)))
				}
			}
			depth++
			if op == 0x03 && rw.loops {
				rw.inserts = append(rw.inserts, insert{r.pos, rw.check})
			}
		case op == 0x05: // else
			if depth < 2 {
				return fail(refuse("else outside a block"))
			}
		case op == 0x0B: // end
			depth--
		case op == 0x00, op == 0x01, op == 0x0F, op == 0x1A, op == 0x1B, // unreachable, nop, return, drop, select
			op >= 0x45 && op <= 0xC4, // numeric, sign extension
			op == 0xD1:               // ref.is_null
		case op == 0x23, op == 0x24: // global.get/set
			idx, err := r.u32()
			if err != nil {
				return fail(err)
			}
			if idx >= global {
				return fail(refuse("global %d out of range", idx))
			}
		case op == 0x10, op == 0x11: // call f, call_indirect type table
			calls = true
			if _, err := r.u32(); err != nil {
				return fail(err)
			}
			if op == 0x11 {
				if _, err := r.u32(); err != nil {
					return fail(err)
				}
			}
		case op == 0x0C, op == 0x0D, // br, br_if
			op >= 0x20 && op <= 0x22, // local.get/set/tee
			op == 0x25, op == 0x26,   // table.get/set
			op == 0xD2: // ref.func
			if _, err := r.u32(); err != nil {
				return fail(err)
			}
		case op == 0x0E: // br_table
			k, err := r.u32()
			if err != nil {
				return fail(err)
			}
			for range uint64(k) + 1 {
				if _, err := r.u32(); err != nil {
					return fail(err)
				}
			}
		case op == 0x1C: // select t*
			k, err := r.u32()
			if err != nil {
				return fail(err)
			}
			if k != 1 {
				return fail(refuse("select with %d types", k))
			}
			if err := r.valType(); err != nil {
				return fail(err)
			}
		case op >= 0x28 && op <= 0x3E: // loads and stores
			align, err := r.u32()
			if err != nil {
				return fail(err)
			}
			if align > 3 { // multi-memory flag or beyond any natural alignment
				return fail(refuse("memarg alignment %d", align))
			}
			if _, err := r.u32(); err != nil {
				return fail(err)
			}
		case op == 0x3F, op == 0x40: // memory.size, memory.grow
			if err := r.zero(); err != nil {
				return fail(err)
			}
		case op == 0x41: // i32.const
			if _, err := r.leb(32, true); err != nil {
				return fail(err)
			}
		case op == 0x42: // i64.const
			if _, err := r.leb(64, true); err != nil {
				return fail(err)
			}
		case op == 0x43: // f32.const
			if _, err := r.bytes(4); err != nil {
				return fail(err)
			}
		case op == 0x44: // f64.const
			if _, err := r.bytes(8); err != nil {
				return fail(err)
			}
		case op == 0xD0: // ref.null t
			t, err := r.byte()
			if err != nil {
				return fail(err)
			}
			if t != 0x70 && t != 0x6F {
				return fail(refuse("ref.null 0x%02x", t))
			}
		case op == 0xFC:
			sub, err := r.byte()
			if err != nil {
				return fail(err)
			}
			switch {
			case sub <= 7: // trunc_sat
			case sub == 8: // memory.init data mem
				if _, err := r.u32(); err != nil {
					return fail(err)
				}
				if err := r.zero(); err != nil {
					return fail(err)
				}
			case sub == 9, sub == 13, sub == 15, sub == 16, sub == 17: // data.drop, elem.drop, table.grow/size/fill
				if _, err := r.u32(); err != nil {
					return fail(err)
				}
			case sub == 10: // memory.copy mem mem
				if err := r.zero(); err != nil {
					return fail(err)
				}
				if err := r.zero(); err != nil {
					return fail(err)
				}
			case sub == 11: // memory.fill mem
				if err := r.zero(); err != nil {
					return fail(err)
				}
			case sub == 12, sub == 14: // table.init elem table, table.copy table table
				if _, err := r.u32(); err != nil {
					return fail(err)
				}
				if _, err := r.u32(); err != nil {
					return fail(err)
				}
			default:
				return fail(refuse("opcode 0xFC %d", sub))
			}
			// Bulk instructions, whose last operand is their size.
			switch sub {
			case 8, 10, 11: // memory.init, memory.copy, memory.fill
				rw.inserts = append(rw.inserts, insert{at, rw.bulkMem})
			case 12, 14, 15, 17: // table.init, table.copy, table.grow, table.fill
				rw.inserts = append(rw.inserts, insert{at, rw.bulkTable})
			}
		default:
			// SIMD (0xFD), atomics (0xFE), exceptions, tail calls, typed
			// function references, GC and anything unknown.
			return fail(refuse("opcode 0x%02x", op))
		}
	}
	if !r.eof() {
		return fail(refuse("function has %d bytes after its end", len(code)-r.pos))
	}
	// A leaf function runs at most its own size between checks (its loops
	// and bulk instructions count): only functions that call need one at entry, where every cycle
	// of calls passes.
	copied := 0
	if calls {
		out = append(out, code[:entry]...)
		out = append(out, rw.check...)
		copied = entry
	}
	for _, in := range rw.inserts {
		out = append(out, code[copied:in.at]...)
		out = append(out, in.code...)
		copied = in.at
	}
	return append(out, code[copied:]...), nil
}

// zero reads a reserved byte or memory index that must be 0.
func (r *wreader) zero() error {
	c, err := r.byte()
	if err != nil {
		return err
	}
	if c != 0 {
		return refuse("reserved byte 0x%02x", c)
	}
	return nil
}

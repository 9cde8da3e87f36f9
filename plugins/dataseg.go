package plugins

// Data segment coalescing: a cheaper instantiation for Go-built guests.
//
// Go's linker splits a module's initial memory into a data segment at
// every run of zeros longer than a few bytes: the built-in module has
// 56190 segments, most 17 to 32 bytes apart. wazero evaluates each
// segment's offset expression and copies each one on every instantiation,
// which was a fifth of the CPU of a hot swap. coalesceData merges
// neighbouring active segments whose gap is at most maxDataGap bytes,
// filling the gap with the zeros the memory already holds there, so the
// instance starts with the same bytes (12 segments for the built-ins, the
// module 1 MB larger in memory).
//
// Like the loop instrumentation it is strict: a data section it does not
// fully understand (a passive segment, another memory, an offset that is
// not an i32.const, overlapping segments, a data count
// section, which means memory.init or data.drop may name segments by
// index) leaves the module as it is.

import (
	"cmp"
	"slices"
)

// maxDataGap is the largest run of zeros coalesceData writes out between
// two segments to merge them.
const maxDataGap = 64

type dataSegment struct {
	offset uint32
	data   []byte
}

// coalesceData returns wasm with its active data segments merged, or wasm
// itself when there is nothing to merge or the module is not understood.
func coalesceData(wasm []byte) []byte {
	r := &wreader{b: wasm}
	if hdr, err := r.bytes(8); err != nil || string(hdr) != "\x00asm\x01\x00\x00\x00" {
		return wasm
	}
	dataStart, dataEnd := -1, -1 // the data section, id and size included
	var dataBody []byte
	for !r.eof() {
		start := r.pos
		id, err := r.byte()
		if err != nil {
			return wasm
		}
		size, err := r.u32()
		if err != nil {
			return wasm
		}
		body, err := r.bytes(uint64(size))
		if err != nil {
			return wasm
		}
		switch id {
		case 12:
			return wasm // a data count: segments may be named by index
		case 11:
			if dataStart >= 0 {
				return wasm
			}
			dataStart, dataEnd, dataBody = start, r.pos, body
		}
	}
	if dataStart < 0 {
		return wasm
	}
	segs, ok := readDataSegments(dataBody)
	if !ok {
		return wasm
	}
	merged := mergeDataSegments(segs)
	if len(merged) == len(segs) {
		return wasm
	}
	body := appendU32(nil, uint32(len(merged)))
	for _, s := range merged {
		body = append(body, 0x00, 0x41) // active, memory 0, i32.const
		body = appendS32(body, int32(s.offset))
		body = append(body, 0x0B)
		body = appendU32(body, uint32(len(s.data)))
		body = append(body, s.data...)
	}
	if uint64(len(body)) >= 1<<32 {
		return wasm
	}
	out := make([]byte, 0, len(wasm)-(dataEnd-dataStart)+len(body)+6)
	out = append(out, wasm[:dataStart]...)
	out = append(out, 11)
	out = appendU32(out, uint32(len(body)))
	out = append(out, body...)
	return append(out, wasm[dataEnd:]...)
}

// readDataSegments decodes a data section of active segments for memory 0
// at constant offsets, and returns them by offset. Segments that overlap
// are refused: which one wins depends on their order.
func readDataSegments(body []byte) ([]dataSegment, bool) {
	s := &wreader{b: body}
	n, err := s.u32()
	if err != nil || uint64(n) > uint64(len(body)) {
		return nil, false
	}
	segs := make([]dataSegment, 0, n)
	for range n {
		flags, err := s.u32()
		if err != nil || flags != 0 {
			return nil, false
		}
		if op, err := s.byte(); err != nil || op != 0x41 {
			return nil, false
		}
		off, err := s.leb(32, true)
		if err != nil {
			return nil, false
		}
		if op, err := s.byte(); err != nil || op != 0x0B {
			return nil, false
		}
		size, err := s.u32()
		if err != nil {
			return nil, false
		}
		data, err := s.bytes(uint64(size))
		if err != nil {
			return nil, false
		}
		segs = append(segs, dataSegment{offset: uint32(off), data: data})
	}
	if !s.eof() {
		return nil, false
	}
	slices.SortStableFunc(segs, func(a, b dataSegment) int { return cmp.Compare(a.offset, b.offset) })
	for i := 1; i < len(segs); i++ {
		if uint64(segs[i].offset) < segEnd(segs[i-1]) {
			return nil, false
		}
	}
	return segs, true
}

// mergeDataSegments joins neighbours at most maxDataGap bytes apart; segs
// are in increasing order without overlap.
func mergeDataSegments(segs []dataSegment) []dataSegment {
	var out []dataSegment
	for i := 0; i < len(segs); {
		j := i + 1 // the run is segs[i:j]
		for j < len(segs) && uint64(segs[j].offset)-segEnd(segs[j-1]) <= maxDataGap {
			j++
		}
		if j == i+1 {
			out = append(out, segs[i])
		} else {
			base := uint64(segs[i].offset)
			data := make([]byte, segEnd(segs[j-1])-base)
			for _, s := range segs[i:j] {
				copy(data[uint64(s.offset)-base:], s.data)
			}
			out = append(out, dataSegment{offset: segs[i].offset, data: data})
		}
		i = j
	}
	return out
}

func segEnd(s dataSegment) uint64 { return uint64(s.offset) + uint64(len(s.data)) }

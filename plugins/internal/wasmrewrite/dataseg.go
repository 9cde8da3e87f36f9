package wasmrewrite

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
func CoalesceData(wasm []byte) []byte {
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
	runs := dataRuns(segs)
	if len(runs) == len(segs) {
		return wasm
	}
	// The new section is written straight into the output, once: the
	// built-in module's data is megabytes.
	size := uint64(len(appendU32(nil, uint32(len(runs)))))
	for i, j := range runs {
		first := 0
		if i > 0 {
			first = runs[i-1]
		}
		n := segEnd(segs[j-1]) - uint64(segs[first].offset)
		size += 3 + uint64(len(appendS32(nil, int32(segs[first].offset)))) + uint64(len(appendU32(nil, uint32(n)))) + n
	}
	if size >= 1<<32 {
		return wasm
	}
	out := make([]byte, 0, dataStart+6+int(size)+len(wasm)-dataEnd)
	out = append(out, wasm[:dataStart]...)
	out = append(out, 11)
	out = appendU32(out, uint32(size))
	out = appendU32(out, uint32(len(runs)))
	first := 0
	for _, j := range runs {
		run := segs[first:j]
		first = j
		base := uint64(run[0].offset)
		out = append(out, 0x00, 0x41) // active, memory 0, i32.const
		out = appendS32(out, int32(run[0].offset))
		out = append(out, 0x0B)
		out = appendU32(out, uint32(segEnd(run[len(run)-1])-base))
		pos := base
		for _, sg := range run {
			if gap := int(uint64(sg.offset) - pos); gap > 0 {
				out = append(out, make([]byte, gap)...) // at most maxDataGap
			}
			out = append(out, sg.data...)
			pos = segEnd(sg)
		}
	}
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
	byOffset := func(a, b dataSegment) int { return cmp.Compare(a.offset, b.offset) }
	if !slices.IsSortedFunc(segs, byOffset) {
		slices.SortStableFunc(segs, byOffset)
	}
	for i := 1; i < len(segs); i++ {
		if uint64(segs[i].offset) < segEnd(segs[i-1]) {
			return nil, false
		}
	}
	return segs, true
}

// dataRuns splits segs (by offset, without overlap) into runs of
// neighbours at most maxDataGap bytes apart, returning where each run ends.
func dataRuns(segs []dataSegment) []int {
	var ends []int
	for i := 1; i <= len(segs); i++ {
		if i == len(segs) || uint64(segs[i].offset)-segEnd(segs[i-1]) > maxDataGap {
			ends = append(ends, i)
		}
	}
	return ends
}

func segEnd(s dataSegment) uint64 { return uint64(s.offset) + uint64(len(s.data)) }

package plugins

import (
	"bytes"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero/experimental"
)

// memLimiter caps every linear memory of one instance (the guest's and the
// Extism kernel's, which holds input and output) at limit bytes. It is a
// wazero memory allocator, passed at instantiation, so plugins that share a
// compiled module can still have different caps.
//
// Where the platform allows (reserve, memory_linux.go), a guest memory is
// one reservation of address space as large as it may ever grow: growing
// only extends the slice, and the pages cost nothing until the guest
// touches them. A Go slice would be copied on every memory.grow (a Go
// guest grows nine times while its runtime starts, 32 MB of copying) and
// would leave its pages to the collector when the instance goes.
type memLimiter struct {
	limit   uint64
	refused atomic.Bool // a grow was refused since the last reset
	tooBig  atomic.Bool // a memory's declared minimum exceeds the limit

	// A reservation is released only when no guest code of the instance
	// runs: wazero frees memories when a module closes, and a runtime
	// closed under a running call (shutdown past its deadline) must not
	// pull the pages out from under it.
	mu      sync.Mutex
	running bool
	freed   []func() // releases deferred until the running call returns
}

// Limit and Refuse make l the kernel's extismhost.Budget.
func (l *memLimiter) Limit() uint64 { return l.limit }
func (l *memLimiter) Refuse()       { l.refused.Store(true) }

func (l *memLimiter) Allocate(_, max uint64) experimental.LinearMemory {
	return &linearMemory{l: l, max: max}
}

// enter and leave bracket guest execution on the instance.
func (l *memLimiter) enter() {
	l.mu.Lock()
	l.running = true
	l.mu.Unlock()
}

func (l *memLimiter) leave() {
	l.mu.Lock()
	l.running = false
	freed := l.freed
	l.freed = nil
	l.mu.Unlock()
	for _, release := range freed {
		release()
	}
}

// release runs f now, or when the running call returns.
func (l *memLimiter) release(f func()) {
	l.mu.Lock()
	if l.running {
		l.freed = append(l.freed, f)
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	f()
}

var useReserve = true

type linearMemory struct {
	l     *memLimiter
	buf   []byte
	max   uint64
	unmap func() // set when buf is a reservation
	tried bool   // a reservation was attempted
}

func (m *linearMemory) Reallocate(size uint64) []byte {
	if size > m.l.limit {
		if m.buf != nil {
			m.l.refused.Store(true)
			return nil
		}
		// wazero panics if the minimum is refused; allocate it and let
		// the instantiation fail afterwards.
		m.l.tooBig.Store(true)
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	if !m.tried && useReserve && m.buf == nil && size <= m.l.limit {
		m.tried = true
		if buf, unmap, ok := reserve(min(m.l.limit, max(m.max, size))); ok && uint64(cap(buf)) >= size {
			m.buf, m.unmap = buf[:size], unmap
			return m.buf
		}
	}
	// Grow with headroom, as append would, but never past the cap.
	newCap := max(size, 2*uint64(cap(m.buf)))
	newCap = min(newCap, max(m.l.limit, size), max(m.max, size))
	buf := make([]byte, size, newCap)
	copy(buf, m.buf)
	m.buf = buf
	return buf
}

// Free releases the memory, or, while a call runs on the instance, has the
// call's end release it: the running guest may still grow it (Reallocate
// reads buf) and touch its pages.
func (m *linearMemory) Free() {
	m.l.release(func() {
		m.buf = nil
		if unmap := m.unmap; unmap != nil {
			m.unmap = nil
			unmap()
		}
	})
}

// guestOutput logs what a guest writes to stdout or stderr, a line at a
// time, and keeps the tail of it for error messages.
type guestOutput struct {
	log    hclog.Logger
	level  hclog.Level
	stream string

	mu   sync.Mutex
	line []byte
	tail []byte
}

const (
	maxLogLine = 1024
	maxTail    = 512
)

func (w *guestOutput) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	w.tail = append(w.tail, p...)
	if len(w.tail) > maxTail {
		w.tail = append(w.tail[:0], w.tail[len(w.tail)-maxTail:]...)
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.line = append(w.line, p[:min(len(p), maxLogLine-len(w.line))]...)
			break
		}
		w.line = append(w.line, p[:min(i, maxLogLine-len(w.line))]...)
		w.flushLocked()
		p = p[i+1:]
	}
	return n, nil
}

func (w *guestOutput) flushLocked() {
	if len(w.line) > 0 {
		w.log.Log(w.level, string(w.line), "stream", w.stream)
	}
	w.line = w.line[:0]
}

// takeTail returns and clears the tail, flushing a partial line.
func (w *guestOutput) takeTail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	s := string(bytes.TrimSpace(w.tail))
	w.tail = w.tail[:0]
	return s
}

func (w *guestOutput) reset() {
	w.mu.Lock()
	w.tail = w.tail[:0]
	w.mu.Unlock()
}

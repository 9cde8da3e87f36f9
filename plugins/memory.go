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
type memLimiter struct {
	limit   uint64
	refused atomic.Bool // a grow was refused since the last reset
	tooBig  atomic.Bool // a memory's declared minimum exceeds the limit
}

func (l *memLimiter) Allocate(_, max uint64) experimental.LinearMemory {
	return &linearMemory{l: l, max: max}
}

type linearMemory struct {
	l   *memLimiter
	buf []byte
	max uint64
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
	// Grow with headroom, as append would, but never past the cap.
	newCap := max(size, 2*uint64(cap(m.buf)))
	newCap = min(newCap, max(m.l.limit, size), max(m.max, size))
	buf := make([]byte, size, newCap)
	copy(buf, m.buf)
	m.buf = buf
	return buf
}

func (m *linearMemory) Free() { m.buf = nil }

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

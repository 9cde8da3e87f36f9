package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/abi/decision"
)

// Defaults of Options.
const (
	DefaultMaxSize   = 100 << 20          // bytes per file
	DefaultMaxFiles  = 5                  // files in all, the current one included
	DefaultRetention = 7 * 24 * time.Hour // in the store
	DefaultMaxRows   = 100000             // in the store
	DefaultQueue     = 4096               // entries waiting to be written
)

// Stdout, as Options.File, writes the lines to standard output.
const Stdout = "-"

// Options configures a Log. Zero values take the defaults above.
type Options struct {
	// File is where lines go: a path, Stdout, or "" for no file.
	File     string
	MaxSize  int64 // a file is rotated before it would grow past this
	MaxFiles int   // files kept, the current one included
	// Output is what Stdout writes to (default os.Stdout).
	Output io.Writer
	// Store, when set, keeps the lines for queries, for Retention (< 0:
	// no age limit) and at most MaxRows of them (< 0: no count limit).
	Store     Store
	Retention time.Duration
	MaxRows   int
	// Redact, when set, masks an entry's Arguments and Result (those it
	// has) before the line is written. An error leaves both out of it.
	Redact func(ctx context.Context, args, result json.RawMessage) (json.RawMessage, json.RawMessage, error)
	// Queue bounds the entries waiting to be written: past it, Record
	// drops them (counted in Stats, and logged).
	Queue  int
	Logger hclog.Logger // nil discards
}

// Store keeps audit lines; host/store.Store is one.
type Store interface {
	// AppendAudit stores records in one transaction; a record whose ID is
	// already stored is skipped.
	AppendAudit(ctx context.Context, recs []Record) error
	// PruneAudit removes the records older than before (zero: none by
	// age) and all but the keep newest (keep < 0: none by count).
	PruneAudit(ctx context.Context, before time.Time, keep int) (int64, error)
}

// Record is one line as the store keeps it: the line, and the fields it is
// queried by.
type Record struct {
	ID      string
	Time    time.Time
	Kind    string
	Server  string
	Tool    string
	Subject string
	Outcome string
	Line    []byte // the JSON object, without its newline
}

// Stats counts what happened to the lines, by sink.
type Stats struct {
	FileWritten, StoreWritten uint64
	// Dropped lines: the queue was full, or the sink failed.
	FileDropped, StoreDropped uint64
	// RedactFailed counts lines written without their arguments and
	// result because redacting them failed.
	RedactFailed uint64
}

// storeBatch bounds the records written in one transaction, and
// storeDelay how long the first of them waits for others: lines reach the
// store within storeDelay, and a busy gateway writes hundreds per
// transaction rather than one. writeDelay is the file's: under load, lines
// are written every writeDelay.
const (
	storeBatch = 256
	storeDelay = 200 * time.Millisecond
	writeDelay = 20 * time.Millisecond
)

// pruneEvery is how often the store's retention is applied.
const pruneEvery = time.Minute

// Log writes entries off the caller's path: Record queues an entry and
// returns at once; one goroutine redacts, encodes and writes it to the
// file, another writes batches to the store. Safe for concurrent use.
type Log struct {
	opts Options
	log  hclog.Logger
	file *rotatingFile // nil without a file (or with stdout)
	out  io.Writer     // stdout, or nil

	in      chan item
	toStore chan item
	done    chan struct{} // closed when both writers have ended

	closeOnce sync.Once
	stopped   atomic.Bool

	fileWritten, storeWritten, fileDropped, storeDropped, redactFailed atomic.Uint64
	droppedSince                                                       atomic.Uint64 // drops not yet logged
	lastDropLog                                                        atomic.Int64  // unix nanos
}

// item is an entry, or a control message (flush, stop) that travels the
// same queues so that it is handled after everything before it.
type item struct {
	e    *Entry
	rec  *Record
	ctl  chan struct{} // closed once handled
	stop bool
}

// New opens the file (the only error: a file that cannot be opened) and
// starts the writers. Close stops them.
func New(o Options) (*Log, error) {
	if o.MaxSize <= 0 {
		o.MaxSize = DefaultMaxSize
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.MaxRows == 0 {
		o.MaxRows = DefaultMaxRows
	}
	if o.Queue <= 0 {
		o.Queue = DefaultQueue
	}
	l := &Log{opts: o, log: o.Logger, in: make(chan item, o.Queue), done: make(chan struct{})}
	if l.log == nil {
		l.log = hclog.NewNullLogger()
	}
	switch o.File {
	case "":
	case Stdout:
		l.out = o.Output
		if l.out == nil {
			l.out = os.Stdout
		}
	default:
		f, err := openRotating(o.File, o.MaxSize, o.MaxFiles)
		if err != nil {
			return nil, err
		}
		l.file = f
	}
	storeDone := make(chan struct{})
	if o.Store != nil {
		l.toStore = make(chan item, o.Queue)
		go l.storeWriter(storeDone)
	} else {
		close(storeDone)
	}
	go func() {
		l.writer()
		<-storeDone
		close(l.done)
	}()
	return l, nil
}

// Record queues e to be written; it never blocks. The entry must not be
// changed afterwards. When the queue is full the entry is dropped,
// counted and, at most every 10 seconds, logged.
func (l *Log) Record(e *Entry) {
	if l.stopped.Load() {
		return
	}
	select {
	case l.in <- item{e: e}:
	default:
		l.drop(l.file != nil || l.out != nil, l.toStore != nil, "the audit queue is full")
	}
}

// drop counts a line lost to the file, the store or both.
func (l *Log) drop(file, store bool, why string) {
	if file {
		l.fileDropped.Add(1)
	}
	if store {
		l.storeDropped.Add(1)
	}
	n := l.droppedSince.Add(1)
	now := time.Now().UnixNano()
	last := l.lastDropLog.Load()
	if now-last >= int64(10*time.Second) && l.lastDropLog.CompareAndSwap(last, now) {
		l.droppedSince.Add(-n)
		l.log.Warn("audit lines dropped", "count", n, "reason", why)
	}
}

// Flush returns once every entry recorded before it has been written to
// the file and the store (or dropped), or ctx ends.
func (l *Log) Flush(ctx context.Context) error {
	if l.stopped.Load() {
		return errors.New("audit: log closed")
	}
	ctl := make(chan struct{})
	select {
	case l.in <- item{ctl: ctl}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ctl:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close writes what is queued (until ctx ends), closes the file and stops
// the writers. Entries recorded afterwards are ignored.
func (l *Log) Close(ctx context.Context) error {
	var err error
	l.closeOnce.Do(func() {
		l.stopped.Store(true)
		select {
		case l.in <- item{stop: true}:
		case <-ctx.Done():
			err = ctx.Err()
			return
		}
		select {
		case <-l.done:
		case <-ctx.Done():
			err = ctx.Err()
		}
	})
	return err
}

// Stats returns the counters.
func (l *Log) Stats() Stats {
	return Stats{FileWritten: l.fileWritten.Load(), StoreWritten: l.storeWritten.Load(),
		FileDropped: l.fileDropped.Load(), StoreDropped: l.storeDropped.Load(), RedactFailed: l.redactFailed.Load()}
}

// writer redacts, encodes and writes entries to the file, and hands them
// to the store writer. A line that finds it idle is written at once; under
// load it wakes every writeDelay and writes what came meanwhile in one go,
// so that a busy gateway pays neither a wake-up nor a write per call.
func (l *Log) writer() {
	for it := range l.in {
		if l.handle(it) {
			return
		}
		l.flushFile()
		for {
			time.Sleep(writeDelay)
			n, stop := l.drain()
			l.flushFile()
			if stop {
				return
			}
			if n == 0 {
				break // idle again: block on the queue
			}
		}
	}
}

// drain handles what is queued now, without waiting; stop reports the
// stop item among it.
func (l *Log) drain() (n int, stop bool) {
	for {
		select {
		case it := <-l.in:
			n++
			if l.handle(it) {
				return n, true
			}
		default:
			return n, false
		}
	}
}

// handle writes an entry or carries out a control item; true for stop.
func (l *Log) handle(it item) (stop bool) {
	switch {
	case it.e != nil:
		l.write(it.e)
	case it.stop:
		l.flushFile()
		if l.file != nil {
			if err := l.file.close(); err != nil {
				l.log.Error("audit file", "error", err)
			}
		}
		if l.toStore != nil {
			l.toStore <- it
		}
		return true
	case it.ctl != nil:
		l.flushFile()
		if l.toStore != nil {
			l.toStore <- it // acknowledged by the store writer
		} else {
			close(it.ctl)
		}
	}
	return false
}

func (l *Log) flushFile() {
	if l.file == nil {
		return
	}
	if err := l.file.flush(); err != nil {
		l.log.Error("audit file", "error", err)
	}
}

func (l *Log) write(e *Entry) {
	if l.opts.Redact != nil && (len(e.Arguments) > 0 || len(e.Result) > 0) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		args, res, err := l.opts.Redact(ctx, e.Arguments, e.Result)
		cancel()
		if err != nil {
			l.redactFailed.Add(1)
			l.log.Warn("audit: redacting arguments and result failed; the line goes without them", "id", e.ID, "error", err)
			args, res = nil, nil
		}
		e.Arguments, e.Result = args, res
	}
	if e.Decisions == nil {
		e.Decisions = []decision.Decision{}
	}
	if e.Caller.Groups == nil {
		e.Caller.Groups = []string{}
	}
	line, err := json.Marshal(e)
	if err != nil {
		// Arguments or a result that are not JSON: the line goes
		// without them rather than not at all.
		e.Arguments, e.Result = nil, nil
		if line, err = json.Marshal(e); err != nil {
			l.drop(true, l.toStore != nil, fmt.Sprintf("encoding: %v", err))
			return
		}
	}
	if !utf8.Valid(line) {
		// A result of bytes that are not UTF-8 (a raw upstream result):
		// PostgreSQL refuses such text, and readers choke on it.
		line = []byte(strings.ToValidUTF8(string(line), "\uFFFD"))
	}
	if l.file != nil || l.out != nil {
		if err := l.writeLine(line); err != nil {
			l.drop(true, false, err.Error())
		} else {
			l.fileWritten.Add(1)
		}
	}
	if l.toStore != nil {
		kind := e.Kind
		if kind == "" {
			kind = KindCall
		}
		rec := &Record{ID: e.ID, Time: e.Time, Kind: kind, Server: e.Server, Tool: e.Tool, Subject: e.Caller.Subject, Outcome: e.Outcome, Line: line}
		select {
		case l.toStore <- item{rec: rec}:
		default:
			l.drop(false, true, "the store falls behind")
		}
	}
}

func (l *Log) writeLine(line []byte) error {
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	if l.file != nil {
		return l.file.write(buf)
	}
	_, err := l.out.Write(buf)
	return err
}

// storeWriter writes records in batches and applies the retention. A
// record that finds it idle waits storeDelay for others, so that one
// transaction (one sync to disk) carries many lines.
func (l *Log) storeWriter(done chan struct{}) {
	defer close(done)
	prune := time.NewTicker(pruneEvery)
	defer prune.Stop()
	l.prune()
	batch := make([]Record, 0, storeBatch)
	for {
		var first item
		select {
		case <-prune.C:
			l.prune()
			continue
		case first = <-l.toStore:
		}
		if first.rec != nil {
			time.Sleep(storeDelay)
		}
		// In queue order: a flush is acknowledged, and a stop obeyed,
		// once the records before it are written.
		for it, ok := first, true; ok; {
			switch {
			case it.rec != nil:
				batch = append(batch, *it.rec)
				if len(batch) == storeBatch {
					l.appendBatch(batch)
					batch = batch[:0]
				}
			default:
				l.appendBatch(batch)
				batch = batch[:0]
				if it.stop {
					return
				}
				close(it.ctl)
			}
			select {
			case it = <-l.toStore:
			default:
				ok = false
			}
		}
		l.appendBatch(batch)
		batch = batch[:0]
	}
}

func (l *Log) appendBatch(batch []Record) {
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.opts.Store.AppendAudit(ctx, batch); err != nil {
		for range batch {
			l.drop(false, true, "the store refused them: "+err.Error())
		}
		return
	}
	l.storeWritten.Add(uint64(len(batch)))
}

func (l *Log) prune() {
	var before time.Time
	if l.opts.Retention > 0 {
		before = time.Now().Add(-l.opts.Retention)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := l.opts.Store.PruneAudit(ctx, before, l.opts.MaxRows)
	switch {
	case err != nil:
		l.log.Warn("audit: applying the retention in the store failed", "error", err)
	case n > 0:
		l.log.Debug("audit: old lines removed from the store", "count", n)
	}
}

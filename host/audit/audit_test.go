package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/abi/decision"
)

func entry(i int) *Entry {
	now := time.Now()
	return &Entry{ID: NewID(now), Time: now.UTC(), Name: fmt.Sprintf("srv__tool_%04d", i), Server: "srv", Tool: "tool", Outcome: "ok"}
}

// readLines decodes every line of files, in order.
func readLines(t *testing.T, files ...string) []*Entry {
	t.Helper()
	var out []*Entry
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			e, err := Decode(sc.Bytes())
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, e)
		}
	}
	return out
}

func TestFileRotatesBySize(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "logs", "audit.jsonl")
	l, err := New(Options{File: path, MaxSize: 4096, MaxFiles: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		l.Record(entry(i))
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	files := Files(path)
	if len(files) != 3 || files[0] != path+".2" || files[1] != path+".1" || files[2] != path {
		t.Fatalf("files %q, want %s.2, .1 and itself", files, path)
	}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > 4096 || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %d bytes, mode %v; want at most 4096, 0600", f, fi.Size(), fi.Mode().Perm())
		}
	}
	if _, err := os.Stat(path + ".3"); err == nil {
		t.Error("a fourth file is kept")
	}
	// What is kept is the newest lines, in order, ending with the last.
	lines := readLines(t, files...)
	if len(lines) == 0 || len(lines) >= 200 || lines[len(lines)-1].Name != "srv__tool_0199" {
		t.Fatalf("%d lines kept, last %+v", len(lines), lines[len(lines)-1])
	}
	for i := 1; i < len(lines); i++ {
		if lines[i].ID <= lines[i-1].ID {
			t.Fatalf("line %d is out of order", i)
		}
	}
	if st := l.Stats(); st.FileWritten != 200 || st.FileDropped != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestFileAppendsAcrossRestarts(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for round := range 2 {
		l, err := New(Options{File: path})
		if err != nil {
			t.Fatal(err)
		}
		l.Record(entry(round))
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if lines := readLines(t, path); len(lines) != 2 {
		t.Fatalf("%d lines after two runs, want 2", len(lines))
	}
}

// syncBuffer is a bytes.Buffer safe for the writer goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestStdoutAndRedaction(t *testing.T) {
	t.Parallel()
	var out syncBuffer
	redact := func(_ context.Context, args, res json.RawMessage) (json.RawMessage, json.RawMessage, error) {
		if bytes.Contains(args, []byte("fail")) {
			return nil, nil, errors.New("the redact plugin failed")
		}
		return bytes.ReplaceAll(args, []byte("ghp_secret"), []byte("[REDACTED]")), res, nil
	}
	l, err := New(Options{File: Stdout, Output: &out, Redact: redact})
	if err != nil {
		t.Fatal(err)
	}
	e := entry(1)
	e.Arguments, e.Result = json.RawMessage(`{"token":"ghp_secret"}`), json.RawMessage(`{"content":[]}`)
	l.Record(e)
	f := entry(2)
	f.Arguments, f.Result = json.RawMessage(`{"mode":"fail"}`), json.RawMessage(`{"content":[]}`)
	l.Record(f)
	if err := l.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines: %s", len(lines), out.String())
	}
	if !strings.Contains(lines[0], `"arguments":{"token":"[REDACTED]"}`) || strings.Contains(lines[0], "ghp_secret") {
		t.Errorf("not redacted: %s", lines[0])
	}
	if strings.Contains(lines[1], `"arguments"`) || strings.Contains(lines[1], `"result"`) {
		t.Errorf("a line whose redaction failed keeps its arguments or result: %s", lines[1])
	}
	// The line's fixed members are there even when empty.
	for _, m := range []string{`"decisions":[]`, `"groups":[]`, `"caller":{`, `"durationMs":0`} {
		if !strings.Contains(lines[0], m) {
			t.Errorf("no %s in %s", m, lines[0])
		}
	}
	if st := l.Stats(); st.RedactFailed != 1 || st.FileWritten != 2 {
		t.Errorf("stats %+v", st)
	}
	l.Close(context.Background())
}

// blockingWriter blocks every write until released: a disk that hangs.
type blockingWriter struct{ release chan struct{} }

func (w blockingWriter) Write(p []byte) (int, error) { <-w.release; return len(p), nil }

// TestRecordNeverBlocks: with the writer stuck, Record returns at once,
// and what does not fit in the queue is counted as dropped.
func TestRecordNeverBlocks(t *testing.T) {
	t.Parallel()
	w := blockingWriter{release: make(chan struct{})}
	l, err := New(Options{File: Stdout, Output: w, Queue: 8})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range 100 {
		l.Record(entry(i))
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("100 Records took %s with the writer stuck", d)
	}
	close(w.release)
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := l.Stats()
	if st.FileDropped < 80 || st.FileWritten+st.FileDropped != 100 {
		t.Fatalf("stats %+v: want about 90 dropped, and every line written or dropped", st)
	}
	l.Record(entry(101)) // after Close: ignored, no panic
}

func TestDecode(t *testing.T) {
	t.Parallel()
	e := entry(7)
	e.Decisions = []decision.Decision{{Plugin: "deny", Hook: "tool_call", Action: decision.Deny, Reason: "no"}}
	line, _ := json.Marshal(e)
	got, err := Decode(append(line, '\n'))
	if err != nil || got.ID != e.ID || !got.Time.Equal(e.Time) || got.Decisions[0].Reason != "no" {
		t.Fatalf("Decode = %+v, %v", got, err)
	}
	// A newer mcphost's extra members are ignored.
	if _, err := Decode([]byte(`{"id":"x","time":"2026-11-25T10:00:00Z","future":{"a":1}}`)); err != nil {
		t.Errorf("extra member: %v", err)
	}
	for _, bad := range []string{``, `[]`, `{}`, `{"id":"x"}`, `{"id":"x","time":"2026-11-25T10:00:00Z"} {}`, `{"id":1,"time":"2026-11-25T10:00:00Z"}`, `{"id":"x","time":"yesterday"}`} {
		if _, err := Decode([]byte(bad)); !errors.Is(err, ErrLine) {
			t.Errorf("Decode(%q) = %v, want ErrLine", bad, err)
		}
	}
}

// FuzzDecode: whatever a file holds, Decode either refuses it with
// ErrLine or returns an entry with an id and a time that encodes again.
func FuzzDecode(f *testing.F) {
	line, _ := json.Marshal(entry(1))
	f.Add(line)
	f.Add([]byte(`{"id":"a","time":"2026-11-25T10:00:00.123456789+02:00","decisions":[{"plugin":"p","paths":["/a"]}],"arguments":{"x":[1,2]}}`))
	f.Add([]byte(`{"id":"a","time":"2026-11-25T10:00:00Z","result":null}`))
	f.Add([]byte("{\"id\":\"\xff\",\"time\":\"2026-11-25T10:00:00Z\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrLine) {
				t.Fatalf("error %v is not ErrLine", err)
			}
			return
		}
		if e.ID == "" || e.Time.IsZero() {
			t.Fatalf("decoded %+v without id or time", e)
		}
		again, err := json.Marshal(e)
		if err != nil {
			// A time outside what RFC 3339 can spell decodes but does
			// not encode; nothing else should fail.
			if strings.Contains(err.Error(), "Time.MarshalJSON") {
				return
			}
			t.Fatalf("re-encoding %+v: %v", e, err)
		}
		if _, err := Decode(again); err != nil {
			t.Fatalf("the re-encoded line %s does not decode: %v", again, err)
		}
	})
}

func TestNewIDOrder(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	a, b := NewID(t0), NewID(t0)
	c := NewID(t0.Add(time.Nanosecond))
	if a == b || !ValidID(a) || !ValidID(c) || !(a < c) || !(b < c) {
		t.Fatalf("ids %s %s %s", a, b, c)
	}
	if ValidID("x") || ValidID(strings.ToUpper(a)) {
		t.Fatal("ValidID accepts what NewID never gives")
	}
}

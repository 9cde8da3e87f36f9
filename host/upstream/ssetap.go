package upstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/internal/paramheader"
)

// sseTap is tapTransport for streamable HTTP upstreams, one layer down:
// the go-sdk's streamable client connection cannot be wrapped (it
// implements an unexported interface), so the tap sits in its HTTP client
// and reads the event streams as the go-sdk reads them. A progress or log
// notification is forwarded when the go-sdk reaches it, so before the
// go-sdk has read the result that follows it, and is then taken out of
// the stream; its event id stays, so resuming a stream replays nothing.
type sseTap struct {
	base  http.RoundTripper
	u     *Server
	bound *atomic.Pointer[mcp.ClientSession]
	init  *initCapture // takes the initialize answer (tasks.go)
}

func (t sseTap) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(paramheader.Add(r)) // a tools/call's Mcp-Param-* headers
	if err == nil && t.init != nil && r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
		resp.Body = captureBody{resp.Body, t.init} // only initialize is sent before the session has an id
	}
	if err != nil || resp.StatusCode != http.StatusOK || !isEventStream(resp.Header.Get("Content-Type")) {
		return resp, err
	}
	resp.Body = &SSETapBody{
		Src: resp.Body,
		R:   bufio.NewReader(resp.Body),
		Tap: func(method string, params json.RawMessage) bool {
			return t.u.tap(t.bound.Load(), method, params)
		},
	}
	return resp, nil
}

func isEventStream(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "text/event-stream"
}

// MaxTapEvent bounds the event the tap holds back to inspect. Larger
// events pass through unread: progress and log notifications are small,
// and holding a large result whole would double its memory.
const MaxTapEvent = 64 << 10

// sseTapBody passes an event stream through event by event, leaving out
// the data of the notifications tap takes.
type SSETapBody struct {
	Src io.ReadCloser
	R   *bufio.Reader
	Tap func(method string, params json.RawMessage) bool

	event   []byte // the event being read, whole lines
	long    bool   // the event outgrew maxTapEvent and is passed through as read
	midLine bool   // the last read ended inside a line longer than r's buffer
	out     []byte // bytes to hand to the reader
	off     int    // how much of out was handed over
	readErr error  // the source's error, returned once out is drained
}

func (b *SSETapBody) Read(p []byte) (int, error) {
	for b.off == len(b.out) && b.readErr == nil {
		b.out, b.off = b.out[:0], 0
		b.fill()
	}
	if b.off == len(b.out) {
		return 0, b.readErr
	}
	n := copy(p, b.out[b.off:])
	b.off += n
	return n, nil
}

func (b *SSETapBody) Close() error { return b.Src.Close() }

// fill reads one line from the source and adds to out what may be passed
// on: nothing while an event is being gathered, the event (or what is
// left of it) once its blank line arrives.
func (b *SSETapBody) fill() {
	line, err := b.R.ReadSlice('\n')
	switch {
	case b.long:
		b.out = append(b.out, line...)
	default:
		b.event = append(b.event, line...)
		if len(b.event) > MaxTapEvent {
			b.out = append(b.out, b.event...)
			b.event = b.event[:0]
			b.long = true
		}
	}
	wasMidLine := b.midLine
	b.midLine = err == bufio.ErrBufferFull
	if b.midLine {
		return // the rest of the line comes with the next read
	}
	if err != nil {
		b.out = append(b.out, b.event...) // an unfinished event goes on as it is
		b.event = b.event[:0]
		b.readErr = err
		return
	}
	if wasMidLine || len(bytes.TrimRight(line, "\r\n")) > 0 {
		return
	}
	// A blank line ends the event.
	if b.long {
		b.long = false
		return
	}
	b.out = b.endEvent(b.out, b.event)
	b.event = b.event[:0]
}

// endEvent appends to out the event, or, if tap took its notification,
// only the event's id and retry fields (an event without data is not
// dispatched, but its id still counts for resumption).
func (b *SSETapBody) endEvent(out, event []byte) []byte {
	var name string
	var data []byte
	for rest := event; len(rest) > 0; {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		field, value, _ := bytes.Cut(bytes.TrimRight(line, "\r"), []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, value...)
		}
	}
	if (name != "" && name != "message") || !isTappable(data) {
		return append(out, event...)
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(data, &msg) != nil || msg.ID != nil || !b.Tap(msg.Method, msg.Params) {
		return append(out, event...)
	}
	kept := false
	for rest := event; len(rest) > 0; {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		if bytes.HasPrefix(line, []byte("id:")) || bytes.HasPrefix(line, []byte("retry:")) {
			out = append(append(out, line...), '\n')
			kept = true
		}
	}
	if kept {
		blank := event[bytes.LastIndexByte(event[:len(event)-1], '\n')+1:] // as the upstream ended it
		out = append(out, blank...)
	}
	return out
}

// isTappable is a cheap look for the notifications tap takes, so that
// results are not decoded twice.
func isTappable(data []byte) bool {
	return bytes.Contains(data, []byte(`"notifications/progress"`)) || bytes.Contains(data, []byte(`"notifications/message"`)) ||
		bytes.Contains(data, []byte(`"notifications/tasks/status"`))
}

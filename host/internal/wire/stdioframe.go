package wire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk's stdio transport ends the session on the first frame it
// cannot decode. A client's stray line (a shell echo, a typo) must not
// end the only session a stdio server has: stdioFrames reads the client's
// lines itself, answers each one that is not a JSON-RPC message with a
// JSON-RPC error (id null, as JSON-RPC 2.0 §5 asks when the id cannot be
// read) and hands only well-formed lines on to the go-sdk.

// maxStdioLine bounds one line from a stdio client, as the go-sdk does.
const maxStdioLine = mcp.DefaultMaxLineLength

// LockedWriter serialises whole-message writes from the go-sdk (one Write
// per message) and from stdioFrames' error answers, and tells calls which
// of the client's requests have been answered.
type LockedWriter struct {
	mu    sync.Mutex
	W     io.WriteCloser
	calls *pendingCalls
}

func (l *LockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	n, err := l.W.Write(p)
	l.mu.Unlock()
	if err == nil && l.calls != nil {
		l.calls.answered(p)
	}
	return n, err
}

func (l *LockedWriter) Close() error { return l.W.Close() }

// StdioFrames returns the reader the go-sdk should read: the lines of r
// that are JSON-RPC messages, one per line. Other
// lines are answered on w and dropped. The returned reader ends when r
// does, once every request read has been answered on w (or ctx ends): the
// go-sdk ends the session at the end of its input, and a client that
// writes its requests and closes its end must still get the answers.
// Closing the reader stops the copy at the next line.
func StdioFrames(ctx context.Context, r io.ReadCloser, w *LockedWriter) io.ReadCloser {
	pr, pw := io.Pipe()
	w.calls = newPendingCalls()
	f := &frameReader{PipeReader: pr, src: r, closed: make(chan struct{})}
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, tooLong, err := readLine(br, maxStdioLine)
			if len(line) > 0 || tooLong {
				msg, ans := CheckFrame(line, tooLong)
				if ans != nil {
					if _, werr := w.Write(ans); werr != nil {
						pw.CloseWithError(werr)
						return
					}
				} else {
					w.calls.read(msg)
					if _, werr := pw.Write(append(line, '\n')); werr != nil {
						return // the session ended
					}
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
					w.calls.wait(ctx, f.closed)
				}
				pw.CloseWithError(err) // nil: EOF for the go-sdk
				return
			}
		}
	}()
	return f
}

// frameReader closes the client's stream too, so that the copy ends.
type frameReader struct {
	*io.PipeReader
	src       io.Closer
	closed    chan struct{}
	closeOnce sync.Once
}

func (f *frameReader) Close() error {
	f.closeOnce.Do(func() { close(f.closed) })
	f.PipeReader.Close()
	return f.src.Close()
}

// pendingCalls is the set of a stdio client's requests not yet answered,
// by ID.
type pendingCalls struct {
	mu   sync.Mutex
	ids  map[string]bool
	idle chan struct{} // closed when ids becomes empty; nil when nobody waits
}

func newPendingCalls() *pendingCalls { return &pendingCalls{ids: make(map[string]bool)} }

// idKey is the key of a JSON-RPC ID: "n:" and the number, or "s:" and the
// string.
func IDKey(id jsonrpc.ID) string {
	switch v := id.Raw().(type) {
	case int64:
		return "n:" + strconv.FormatInt(v, 10)
	case string:
		return "s:" + v
	}
	return ""
}

// read records m if it is a request, and forgets one the client cancelled
// (the go-sdk does not answer it).
func (c *pendingCalls) read(m jsonrpc.Message) {
	req, ok := m.(*jsonrpc.Request)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.IsCall() {
		c.ids[IDKey(req.ID)] = true
		return
	}
	if req.Method == "notifications/cancelled" {
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				c.doneLocked(IDKey(id))
			}
		}
	}
}

// answered forgets the request a message written to the client answers.
// (Batches are refused on the way in, so none are answered.)
func (c *pendingCalls) answered(p []byte) {
	k, ok := ResponseID(p)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.doneLocked(k)
}

func (c *pendingCalls) doneLocked(key string) {
	delete(c.ids, key)
	if len(c.ids) == 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
}

// wait returns once every request read has been answered, or ctx ends,
// or stop is closed.
func (c *pendingCalls) wait(ctx context.Context, stop <-chan struct{}) {
	c.mu.Lock()
	if len(c.ids) == 0 {
		c.mu.Unlock()
		return
	}
	if c.idle == nil {
		c.idle = make(chan struct{})
	}
	idle := c.idle

	c.mu.Unlock()
	select {
	case <-idle:
	case <-ctx.Done():
	case <-stop:
	}
}

// ResponseID returns the key of the request a message the go-sdk writes
// answers; ok is false for anything but a response. The go-sdk writes
// {"jsonrpc":"2.0","id":ID,"result"|"error":...}, which is read without
// decoding the result; anything else is decoded.
func ResponseID(p []byte) (key string, ok bool) {
	const prefix = `{"jsonrpc":"2.0","id":`
	rest, found := bytes.CutPrefix(bytes.TrimSpace(p), []byte(prefix))
	if !found {
		return DecodedResponseID(p)
	}
	end := bytes.IndexByte(rest, ',')
	if len(rest) > 0 && rest[0] == '"' {
		end = -1
		for i := 1; i < len(rest); i++ {
			if rest[i] == '\\' {
				i++
			} else if rest[i] == '"' {
				end = i + 1
				break
			}
		}
	}
	if end <= 0 {
		return DecodedResponseID(p)
	}
	raw, after := rest[:end], rest[end:]
	if !bytes.HasPrefix(after, []byte(`,"result"`)) && !bytes.HasPrefix(after, []byte(`,"error"`)) {
		if bytes.HasPrefix(after, []byte(`,"method"`)) {
			return "", false
		}
		return DecodedResponseID(p)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", false
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		return "", false
	}
	return IDKey(id), true
}

// DecodedResponseID is responseID the slow way.
func DecodedResponseID(p []byte) (string, bool) {
	m, err := jsonrpc.DecodeMessage(bytes.TrimSpace(p))
	if err != nil {
		return "", false
	}
	r, ok := m.(*jsonrpc.Response)
	if !ok || !r.ID.IsValid() {
		return "", false
	}
	return IDKey(r.ID), true
}

// readLine reads one line without its end (\n or \r\n) and with spaces
// trimmed. A line longer than max is read to its end and dropped, with
// tooLong set.
func readLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > max+2 { // +2: the line's own \r\n
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSpace(buf), tooLong, err
	}
}

// CheckFrame returns the message of a line, or the JSON-RPC error to
// answer the line with when it is not one message the go-sdk can read.
func CheckFrame(line []byte, tooLong bool) (jsonrpc.Message, []byte) {
	switch {
	case tooLong:
		return nil, frameError(jsonrpc.CodeParseError, fmt.Sprintf("Parse error: line longer than %d bytes", maxStdioLine))
	case !json.Valid(line):
		return nil, frameError(jsonrpc.CodeParseError, "Parse error: the line is not JSON; send one JSON-RPC message per line")
	}
	if line[0] == '[' {
		// MCP dropped JSON-RPC batches (2025-06-18), and the go-sdk ends
		// a session that sends one: answered here, the session goes on.
		return nil, frameError(jsonrpc.CodeInvalidRequest, "Invalid Request: JSON-RPC batches are not supported (MCP 2025-06-18 removed them); send one message per line")
	}
	m, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, frameError(jsonrpc.CodeInvalidRequest, "Invalid Request: not a JSON-RPC 2.0 message")
	}
	return m, nil
}

func frameError(code int64, msg string) []byte {
	return append(ErrorBody(code, msg), '\n')
}

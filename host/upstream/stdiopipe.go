package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"

	"github.com/mcphost-project/mcphost/host/internal/wire"
)

// A stdio upstream's pipes, under the go-sdk's newline-delimited JSON
// connection (mcp.IOTransport): what the go-sdk's CommandTransport does
// (start, and on close: stdin closed, then SIGTERM, then SIGKILL), plus a
// way around the go-sdk for raw calls (rawcall.go) and, so that they keep
// their order with raw replies, the notifications tapConn forwards.
//
// Why: a raw call's reply went through the go-sdk's read loop, decoded
// twice (a frame, then a batch of one, each with its own buffers) and
// handed between two goroutines, only to be taken off again by tapConn;
// and the request was encoded by the go-sdk's writer. That was a sixth of
// a gateway's CPU per call. Now a reply to a raw call, a whole line that is
// a JSON-RPC response with a raw call's id, is taken off the pipe as read
// and handed to its call; the request is written on stdin in one write.
// Every other byte goes to the go-sdk as the server sent it.

// upstreamPipes are one upstream process's stdin and stdout.
type upstreamPipes struct {
	cmd       *exec.Cmd
	stdout    *pipeReader
	stdin     io.WriteCloser
	terminate time.Duration // from stdin closed to SIGTERM, and SIGTERM to SIGKILL

	wmu sync.Mutex // one message per write, from the go-sdk and raw calls alike
}

// startPipes starts cmd with its stdin and stdout as an upstreamPipes.
func startPipes(cmd *exec.Cmd, terminate time.Duration) (*upstreamPipes, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &upstreamPipes{cmd: cmd, stdout: newPipeReader(stdout), stdin: stdin, terminate: terminate}, nil
}

// connect returns the go-sdk's connection over p.
func (p *upstreamPipes) connect() (mcp.Connection, error) {
	c, err := (&mcp.IOTransport{Reader: io.NopCloser(p.stdout), Writer: p}).Connect(context.Background())
	if err != nil {
		return nil, err
	}
	return &pipeConn{Connection: c, pipes: p}, nil
}

// Write writes one whole message (the go-sdk writes each in one call).
func (p *upstreamPipes) Write(b []byte) (int, error) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return p.stdin.Write(b)
}

// Close ends the process as the MCP spec asks of a stdio client: stdin
// closed, then SIGTERM if it has not exited, then SIGKILL.
func (p *upstreamPipes) Close() error {
	// Not under wmu: a write stuck on a server that stopped reading holds
	// it, and closing stdin is what ends that write.
	if err := p.stdin.Close(); err != nil {
		return fmt.Errorf("closing stdin: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	wait := func() (error, bool) {
		select {
		case err := <-exited:
			return err, true
		case <-time.After(p.terminate):
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if p.cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := p.cmd.Process.Kill(); err != nil {
		return err
	}
	if err, ok := wait(); ok {
		return err
	}
	return errors.New("unresponsive subprocess")
}

// pipeConn is the go-sdk's connection over upstreamPipes, which raw calls
// find through it (rawPipes).
type pipeConn struct {
	mcp.Connection
	pipes *upstreamPipes
}

func (c *pipeConn) RawPipes() *upstreamPipes { return c.pipes }

// rawPiper is a connection over upstreamPipes, or one wrapping it.
type rawPiper interface{ RawPipes() *upstreamPipes }

func (c *groupConn) RawPipes() *upstreamPipes {
	if p, ok := c.Connection.(rawPiper); ok {
		return p.RawPipes()
	}
	return nil
}

// pipeReader reads an upstream's stdout for the go-sdk, less the replies
// to raw calls, which it hands to sink.
type pipeReader struct {
	br      *bufio.Reader
	pending []byte // read, not yet handed to the go-sdk
	err     error  // after pending
	long    []byte // a line longer than br's buffer, gathered
	sink    atomic.Pointer[pipeSinks]

	// Where the bytes handed on stand in the go-sdk's stream of JSON
	// values: a line is taken off only where a value may start.
	handed wire.Scanner
}

func newPipeReader(r io.Reader) *pipeReader {
	return &pipeReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// pipeSinks take lines off an upstream's stdout: replies to raw calls, and
// the notifications tapConn forwards at once (tap.go). Both must be taken
// in the same place, in wire order: a progress notification handed to the
// go-sdk could otherwise reach its client after the result it preceded,
// which was taken off first.
type pipeSinks struct {
	deliver func(*jsonrpc.Response) bool
	tap     func(method string, params json.RawMessage) bool
}

// divertTo has lines handed to sinks from now on.
func (r *pipeReader) divertTo(sinks pipeSinks) { r.sink.Store(&sinks) }

func (r *pipeReader) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		line, whole, err := r.line()
		r.err = err
		if len(line) == 0 {
			continue
		}
		if whole && r.handed.AtTop() && r.divert(line) {
			continue
		}
		r.handed.Feed(line)
		r.pending = line
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

// line reads up to and including the next newline. A line longer than the
// buffer is gathered up to the go-sdk's frame limit; past that, it comes
// in parts (whole false), which the go-sdk then refuses as it would.
func (r *pipeReader) line() (line []byte, whole bool, err error) {
	if cap(r.long) > 1<<20 {
		r.long = nil // a long line's buffer is not kept for the next
	}
	b, err := r.br.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return b, err == nil, err
	}
	r.long = append(r.long[:0], b...)
	for len(r.long) < mcp.DefaultMaxLineLength {
		b, err = r.br.ReadSlice('\n')
		r.long = append(r.long, b...)
		if err != bufio.ErrBufferFull {
			return r.long, err == nil, err
		}
	}
	return r.long, false, nil
}

// divert hands line to the sink and reports whether it did: a JSON-RPC
// response (as the go-sdk would decode it: version "2.0", exactly one of
// result and error, nothing else) whose id is a raw call's.
func (r *pipeReader) divert(line []byte) bool {
	sink := r.sink.Load()
	if sink == nil {
		return false
	}
	if bytes.Contains(line, []byte(`"notifications/`)) {
		return r.divertNotification(line, sink.tap)
	}
	if !bytes.Contains(line, []byte(`"`+rawIDPrefix)) {
		return false
	}
	msg := bytes.TrimSpace(line)
	if !wire.ValidObject(msg) {
		return false
	}
	m, ok := wire.Members(msg, `"jsonrpc"`, `"id"`, `"result"`, `"error"`)
	version, id, result, rpcErr := m[0], m[1], m[2], m[3]
	if !ok {
		return false
	}
	if string(version) != `"2.0"` || (result == nil) == (rpcErr == nil) || string(result) == "null" ||
		!bytes.HasPrefix(id, []byte(`"`+rawIDPrefix)) || !wire.PlainASCII(id[1:len(id)-1]) {
		return false
	}
	jid, _ := jsonrpc.MakeID(string(id[1 : len(id)-1]))
	resp := &jsonrpc.Response{ID: jid}
	if rpcErr != nil {
		werr := new(jsonrpc.Error)
		if _, err := segjson.Parse(rpcErr, werr, segjson.DontMatchCaseInsensitiveStructFields); err != nil {
			return false
		}
		resp.Error = werr
	} else {
		resp.Result = append(json.RawMessage(nil), result...) // line is the reader's buffer
	}
	return sink.deliver(resp)
}

// divertNotification hands a notification to tap, read by the go-sdk's own
// decoder, and reports whether tap took it.
func (r *pipeReader) divertNotification(line []byte, tap func(string, json.RawMessage) bool) bool {
	msg, err := jsonrpc.DecodeMessage(bytes.TrimSpace(line))
	if err != nil {
		return false
	}
	req, ok := msg.(*jsonrpc.Request)
	return ok && !req.IsCall() && tap(req.Method, req.Params)
}

// writeRawCall writes a raw tools/call request with the given id and
// encoded params on stdin.
func (p *upstreamPipes) writeRawCall(id string, params []byte) error {
	b := make([]byte, 0, len(id)+len(params)+64)
	b = append(b, `{"jsonrpc":"2.0","id":"`...)
	b = append(b, id...)
	b = append(b, `","method":"tools/call","params":`...)
	b = append(b, params...)
	b = append(b, "}\n"...)
	_, err := p.Write(b)
	return err
}

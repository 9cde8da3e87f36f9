package host

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// lockedWriter serialises whole-message writes from the go-sdk (one Write
// per message) and from stdioFrames' error answers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return l.w.Close() }

// stdioFrames returns the reader the go-sdk should read: the lines of r
// that are JSON-RPC messages (or batches of them), one per line. Other
// lines are answered on w and dropped. The returned reader ends when r
// does; closing it stops the copy at the next line.
func stdioFrames(r io.ReadCloser, w io.Writer) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, tooLong, err := readLine(br, maxStdioLine)
			if len(line) > 0 || tooLong {
				if ans := checkFrame(line, tooLong); ans != nil {
					if _, werr := w.Write(ans); werr != nil {
						pw.CloseWithError(werr)
						return
					}
				} else if _, werr := pw.Write(append(line, '\n')); werr != nil {
					return // the session ended
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				pw.CloseWithError(err) // nil: EOF for the go-sdk
				return
			}
		}
	}()
	return &frameReader{PipeReader: pr, src: r}
}

// frameReader closes the client's stream too, so that the copy ends.
type frameReader struct {
	*io.PipeReader
	src io.Closer
}

func (f *frameReader) Close() error {
	f.PipeReader.Close()
	return f.src.Close()
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

// checkFrame returns the JSON-RPC error to answer a line with, or nil when
// the line is a message (or a batch of messages) the go-sdk can read.
func checkFrame(line []byte, tooLong bool) []byte {
	switch {
	case tooLong:
		return frameError(jsonrpc.CodeParseError, fmt.Sprintf("Parse error: line longer than %d bytes", maxStdioLine))
	case !json.Valid(line):
		return frameError(jsonrpc.CodeParseError, "Parse error: the line is not JSON; send one JSON-RPC message per line")
	}
	if line[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(line, &batch); err != nil || len(batch) == 0 {
			return frameError(jsonrpc.CodeInvalidRequest, "Invalid Request: an empty batch")
		}
		for _, m := range batch {
			if _, err := jsonrpc.DecodeMessage(m); err != nil {
				return frameError(jsonrpc.CodeInvalidRequest, "Invalid Request: a batch member is not a JSON-RPC message")
			}
		}
		return nil
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return frameError(jsonrpc.CodeInvalidRequest, "Invalid Request: not a JSON-RPC 2.0 message")
	}
	return nil
}

func frameError(code int64, msg string) []byte {
	return append(errorBody(code, msg), '\n')
}

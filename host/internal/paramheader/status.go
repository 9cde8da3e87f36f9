package paramheader

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StatusWriter wraps the response writer of a request that the go-sdk's
// handler answers: when the first thing written, with no status set, is a
// JSON-RPC response whose error is HeaderMismatch (Check's), it is sent as
// an application/json body with HTTP 400, as the transport asks; anything
// else passes through unchanged. (The go-sdk writes a handler's error as an
// event of a 200 stream; it checks the headers it knows of itself, with 400.)
func StatusWriter(w http.ResponseWriter) http.ResponseWriter { return &statusWriter{ResponseWriter: w} }

type statusWriter struct {
	http.ResponseWriter
	started bool
}

func (w *statusWriter) WriteHeader(code int) {
	w.started = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if !w.started {
		w.started = true
		if msg, ok := mismatchResponse(p); ok {
			h := w.Header()
			h.Set("Content-Type", "application/json")
			h.Del("Content-Length")
			w.ResponseWriter.WriteHeader(http.StatusBadRequest)
			if _, err := w.ResponseWriter.Write(append(msg, '\n')); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the writer's Flush.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// mismatchResponse reads p, the start of a response (one server-sent
// event, or a JSON body), and returns the JSON-RPC message it holds when
// that is a HeaderMismatch error.
func mismatchResponse(p []byte) ([]byte, bool) {
	if !bytes.Contains(p, []byte("-32020")) {
		return nil, false
	}
	data := p
	data, _ = bytes.CutPrefix(data, []byte("event: message\n"))
	data, _ = bytes.CutPrefix(data, []byte("data: "))
	data = bytes.TrimSpace(data)
	var m struct {
		Error *struct {
			Code int64 `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &m) != nil || m.Error == nil || m.Error.Code != mcp.CodeHeaderMismatch {
		return nil, false
	}
	return data, true
}

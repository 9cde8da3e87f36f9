package sessionless

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/internal/wire"
)

// jsonContentType is the Content-Type of every answer (net/http only reads
// header values).
var jsonContentType = []string{"application/json"}

// Write answers the request id with result (its JSON, as the client gets
// it) or rpcErr, as one application/json JSON-RPC response, which a client
// of protocol 2026-07-28 accepts as it accepts an event stream. An error
// gets the HTTP status SEP-2575 gives its code, as the go-sdk sends it
// (404 for an unknown method; 400 for invalid params, an unsupported
// protocol version or missing client capabilities; 200 otherwise).
func Write(w http.ResponseWriter, id jsonrpc.ID, result json.RawMessage, rpcErr *jsonrpc.Error) {
	msg := &jsonrpc.Response{ID: id, Result: result}
	status := http.StatusOK
	if rpcErr != nil {
		msg.Result, msg.Error = nil, rpcErr
		status = errorStatus(rpcErr.Code)
	}
	out, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		// Cannot happen for the values above; answered as the go-sdk
		// answers what it cannot encode.
		http.Error(w, "encoding the response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	hdr := w.Header()
	hdr["Content-Type"] = jsonContentType
	hdr["Content-Length"] = []string{strconv.Itoa(len(out) + 1)}
	if status != http.StatusOK {
		w.WriteHeader(status)
	}
	_, _ = w.Write(append(out, '\n'))
}

// WriteCompact is Write for a result known to be compact JSON (a cached
// listing, as wire.EncodeJSON encodes it): written around the request's id
// without passing the go-sdk's encoder over it again, which for a listing
// of 1000 tools cost more than the rest of the request.
func WriteCompact(w http.ResponseWriter, id jsonrpc.ID, result json.RawMessage) {
	rawID, err := wire.EncodeJSON(id.Raw())
	if err != nil || !id.IsValid() {
		Write(w, id, result, nil)
		return
	}
	hdr := w.Header()
	hdr["Content-Type"] = jsonContentType
	hdr["Content-Length"] = []string{strconv.Itoa(len(`{"jsonrpc":"2.0","id":,"result":}`) + len(rawID) + len(result) + 1)}
	out := make([]byte, 0, 32+len(rawID))
	out = append(append(append(out, `{"jsonrpc":"2.0","id":`...), rawID...), `,"result":`...)
	_, _ = w.Write(out)
	_, _ = w.Write(result)
	_, _ = w.Write([]byte("}\n"))
}

// errorStatus is the HTTP status of a JSON-RPC error code under SEP-2575.
func errorStatus(code int64) int {
	switch code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

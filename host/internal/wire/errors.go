package wire

import (
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcphost-project/mcphost/internal/secrets"
)

// ErrorBody is a JSON-RPC error response to no request (id null), as sent
// for what never reaches the go-sdk: a refused connection or session, a
// stdio line that is not a message.
func ErrorBody(code int64, msg string) []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", nil, &jsonrpc.Error{Code: code, Message: msg}})
	return b
}

// MethodNotFound reports whether err is a JSON-RPC "method not found"
// (-32601): for an optional list, the server has none of it.
func MethodNotFound(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we) && we.Code == jsonrpc.CodeMethodNotFound
}

// ErrorText is what a client is told of mcphost's own error err (a failed
// connection, a closed session): its text with credentials masked. Errors
// quote upstream URLs, whose query may carry a token (Go's url.Error masks
// only the userinfo password), and connection errors may quote headers or
// configuration. An upstream's own JSON-RPC error is its content, not
// this: result policies see it (callTool).
func ErrorText(err error) string {
	return secrets.MaskText(err.Error())
}

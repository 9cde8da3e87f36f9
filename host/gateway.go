package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
)

// Downstream transports, as policies see them in Caller.Transport.
const (
	DownstreamStdio    = "stdio"
	DownstreamHTTP     = "http"
	DownstreamSSE      = "sse"
	DownstreamEmbedded = "embedded"
)

// markerTool is registered on every downstream mcp.Server but never listed
// or called (the middleware answers tools/list and tools/call). Re-adding it
// is the go-sdk's only public way to send notifications/tools/list_changed
// to every session, debounced.
var markerTool = &mcp.Tool{Name: "_mcphost_catalog", InputSchema: json.RawMessage(`{"type":"object"}`)}

// serverSet is the downstream servers, one per transport, so policies learn
// which transport a caller came by.
type serverSet struct {
	mu      sync.Mutex
	servers []*mcp.Server
}

func (s *serverSet) add(srv *mcp.Server) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.servers = append(s.servers, srv)
}

// toolsChanged sends notifications/tools/list_changed to every session.
func (s *serverSet) toolsChanged() {
	s.mu.Lock()
	servers := append([]*mcp.Server(nil), s.servers...)
	s.mu.Unlock()
	for _, srv := range servers {
		srv.AddTool(markerTool, noopTool)
	}
}

func noopTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return nil, errors.New("unreachable")
}

// MCPServer returns a new downstream MCP server backed by this host, for a
// transport label (DownstreamHTTP, DownstreamStdio, ...). Embedders can
// connect it to any go-sdk transport.
func (h *Host) MCPServer(transport string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "mcphost", Title: "mcphost gateway", Version: Version}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	srv.AddTool(markerTool, noopTool)
	srv.AddReceivingMiddleware(h.receive(transport))
	h.servers.add(srv)
	return srv
}

// receive is the downstream seam: tools/list and tools/call are answered
// from the catalog through the policy; everything else goes to the server.
func (h *Host) receive(transport string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
			// The go-sdk runs handlers on their own goroutines without
			// recovering: a panic here would end the whole host.
			defer func() {
				if p := recover(); p != nil {
					h.log.Error("panic handling request", "method", method, "panic", p, "stack", string(debug.Stack()))
					res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("internal error handling %s", method)}
				}
			}()
			switch method {
			case "tools/list":
				v, err := h.view(ctx, callerOf(req, transport))
				if err != nil {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
				}
				return v.result, nil
			case "tools/call":
				r, ok := req.(*mcp.CallToolRequest)
				if !ok || r.Params == nil {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: missing params"}
				}
				ss, _ := req.GetSession().(*mcp.ServerSession)
				res, err := h.callTool(ctx, callerOf(req, transport), r.Params.Name, r.Params.Arguments, r.Params.Meta, ss)
				if errors.Is(err, ErrUnknownTool) {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
				}
				if err != nil {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
				}
				return res, nil
			}
			return next(ctx, method, req)
		}
	}
}

// callerOf describes the downstream client of a request for policies.
func callerOf(req mcp.Request, transport string) abi.Caller {
	c := abi.Caller{Transport: transport}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		c.SessionID = ss.ID()
		if ip := ss.InitializeParams(); ip != nil && ip.ClientInfo != nil {
			c.ClientName = ip.ClientInfo.Name
			c.ClientVersion = ip.ClientInfo.Version
		}
	}
	// Params may be a typed nil (tools/list without params).
	if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() {
		c.Meta = requestMeta(p.GetMeta())
	}
	if id, ok := ctxIdentity(req); ok {
		c.Identity = id
	}
	return c
}

// requestMeta keeps the parts of a request's _meta that describe the caller;
// the progress token changes per request and would defeat view caching.
func requestMeta(m map[string]any) json.RawMessage {
	if len(m) == 0 {
		return nil
	}
	if _, ok := m["progressToken"]; ok {
		m2 := make(map[string]any, len(m))
		for k, v := range m {
			if k != "progressToken" {
				m2[k] = v
			}
		}
		m = m2
	}
	if len(m) == 0 {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return b
}

// ctxIdentity returns the authenticated identity of an HTTP request, if the
// endpoint authenticates callers.
func ctxIdentity(req mcp.Request) (string, bool) {
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return "", false
	}
	return extra.TokenInfo.UserID, extra.TokenInfo.UserID != ""
}

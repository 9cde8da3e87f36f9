package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/internal/paramheader"
	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/sessionless"
)

// A plain tools/call on an established streamable HTTP session is answered
// ahead of the go-sdk's handler, as tools/list is (fastlist.go): the body is
// read once, the call goes the whole usual way (callTool: view, policies,
// the raw upstream path, result policies, metrics, audit), and the answer is
// one application/json JSON-RPC response.
//
// Why: through the go-sdk's stateful handler a call is decoded twice (the
// batch, then its params), handed between three goroutines, and answered on
// an event stream; that machinery, not mcphost's work, was most of what a
// call through the gateway added to a direct one (docs/BENCHMARKS.md).
//
// What the shortcut takes: one tools/call request (string or integer id)
// whose params hold only name, arguments (an object or null) and _meta (an object
// without progressToken, and without the protocol version key of
// 2026-07-28), on a session fastListSession accepts, with traces off (the
// request span is made in the go-sdk path's middleware). A request with a
// progress token asks for a stream and gets the go-sdk's.
//
// Nothing the call sends the client before its answer may be lost or
// reordered: a session that set a logging level (whose upstream logs go
// out ahead of the answer, on its stream) gets the go-sdk's path, and a
// session whose client may be asked something during a call (sampling,
// elicitation, roots) gets the shortcut only while it has a standalone
// stream open, where such a request then goes, as when the go-sdk itself
// answers in JSON (StreamableHTTPOptions.JSONResponse). (A stream counts as
// open from its GET's arrival to its end; one that closes during the call
// leaves such a question undelivered, and the upstream gets an error for
// it.) And a call that could outlive the session's idle timer, which only
// the go-sdk's own requests hold, goes the go-sdk's way (outlivesCalls).
// The answer's bytes are what the go-sdk encodes (jsonrpc.EncodeMessage of
// the result encoded as its jsonrpc2 layer encodes it); TestFastCall*
// compares the two paths. The call is cancelled when its HTTP request goes
// away, when the session closes, or by the client's notifications/cancelled
// naming it.

// jsonContentType is the Content-Type of every shortcut answer (net/http
// only reads header values).
var jsonContentType = []string{"application/json"}

// maxFastCallBody is the longest tools/call body the shortcut reads whole;
// a longer one goes to the go-sdk.
const maxFastCallBody = 64 << 10

// fastCall answers body, a request of session e, if it is a plain
// tools/call, and reports whether it did.
func (h *Host) fastCall(w http.ResponseWriter, r *http.Request, e *fastListSession, body []byte) bool {
	if h.tracer != nil {
		return false
	}
	p, ok := wire.ParseToolCall(body)
	if !ok {
		return false
	}
	var meta mcp.Meta
	if p.Meta != nil {
		if meta, ok = wire.CallMeta(p.Meta); !ok {
			return false
		}
	}
	id, err := jsonrpc.MakeID(p.ID)
	if err != nil {
		return false
	}
	d, level := h.sessions.lookup(e.ss)
	if d == nil {
		return false // not tracked (yet, or any more): the go-sdk path tracks it
	}
	if level != "" || (asksClient(e.ss) && !h.fastSessions.listens(e.ss.ID())) {
		return false // see above
	}
	if !h.outlivesCalls(e) {
		return false
	}

	ctx, cancel := context.WithCancel(paramheader.WithIncoming(r.Context(), r.Header))
	defer cancel()
	key := e.calls.add(p.ID, cancel)
	defer e.calls.remove(key)

	caller := trackedCaller(d, e.ss, DownstreamHTTP)
	caller.Meta = sessionless.CallerMeta(meta)
	res, err := h.fastCallResult(ctx, caller, &mcp.CallToolParamsRaw{Meta: meta, Name: p.Name, Arguments: p.Args}, e.ss)
	// What the upstream sent during the call goes out first, as on the
	// go-sdk path (on the standalone stream: see above).
	d.out.Flush(ctx)

	msg := &jsonrpc.Response{ID: id}
	if raw, ok := wire.AsSent(res); ok && err == nil {
		// The upstream's bytes: EncodeMessage compacts them as encoding
		// them first would, so that pass is spared.
		msg.Result = raw
	} else if err != nil {
		msg.Error = callError(err) // a recovered panic's, or answerToolCall's as it is
	} else if msg.Result, err = wire.EncodeJSON(res); err != nil {
		msg.Result, msg.Error = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the result: " + err.Error()}
	}
	out, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		// Cannot happen for the values above; answered as the go-sdk
		// answers what it cannot encode.
		http.Error(w, "encoding the response: "+err.Error(), http.StatusInternalServerError)
		return true
	}
	hdr := w.Header()
	hdr["Content-Type"] = jsonContentType // canonical keys, set without Set's work
	hdr["Content-Length"] = []string{strconv.Itoa(len(out) + 1)}
	hdr["Mcp-Session-Id"] = []string{e.ss.ID()}
	if e, ok := msg.Error.(*jsonrpc.Error); ok && e.Code == mcp.CodeHeaderMismatch {
		w.WriteHeader(http.StatusBadRequest) // as the transport asks
	}
	_, _ = w.Write(append(out, '\n'))
	return true
}

// fastCallResult is route's tools/call answer (answerToolCall) without the
// go-sdk, with the same recovery from a panic.
func (h *Host) fastCallResult(ctx context.Context, caller abi.Caller, p *mcp.CallToolParamsRaw, ss *mcp.ServerSession) (res mcp.Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = nil, h.panicked("tools/call", v)
		}
	}()
	return h.answerToolCall(ctx, caller, p, ss)
}

// outlivesCalls reports whether the go-sdk's idle timer of e's session,
// which only its own requests stop and reset, cannot fire during a call
// that starts now: a call may last as long as the longest call timeout of
// the servers (a per_user login as long again). The go-sdk's path holds
// the timer while it serves a request.
func (h *Host) outlivesCalls(e *fastListSession) bool {
	timeout := h.cfg.Listen.SessionTimeout
	if timeout <= 0 {
		return true
	}
	var longest time.Duration
	for _, u := range h.upstreamList() {
		d := u.Config.Timeout
		if u.PerUser() {
			d *= 2
		}
		longest = max(longest, d)
	}
	left := timeout - time.Since(time.Unix(0, e.lastSeen.Load()))
	return longest+time.Minute < left
}

// asksClient reports whether an upstream may send ss's client a request
// during a call: it declared sampling, elicitation or roots.
func asksClient(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil {
		return false
	}
	c := ip.Capabilities
	return c.Sampling != nil || c.Elicitation != nil || c.RootsV2 != nil || c.Roots.ListChanged
}

// fastCalls are a session's shortcut calls in flight, so that the client's
// notifications/cancelled and the session's end reach them as they reach
// the go-sdk's.
type fastCalls struct {
	mu   sync.Mutex
	next uint64
	m    map[uint64]fastCallEntry
}

type fastCallEntry struct {
	id     any // the request id
	cancel context.CancelFunc
}

func (f *fastCalls) add(id any, cancel context.CancelFunc) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[uint64]fastCallEntry{}
	}
	f.next++
	f.m[f.next] = fastCallEntry{id: id, cancel: cancel}
	return f.next
}

func (f *fastCalls) remove(key uint64) {
	f.mu.Lock()
	delete(f.m, key)
	f.mu.Unlock()
}

// cancel cancels the calls whose request id is id (a string or a float64,
// as the go-sdk decodes both), and reports whether there was one.
func (f *fastCalls) cancel(id any) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	found := false
	for _, c := range f.m {
		if c.id == id {
			c.cancel()
			found = true
		}
	}
	return found
}

// cancelAll cancels every call: the session is gone.
func (f *fastCalls) cancelAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.m {
		c.cancel()
	}
}

// cancelFastCall passes a client's notifications/cancelled to the shortcut
// call it names, if any.
func (h *Host) cancelFastCall(ss *mcp.ServerSession, req mcp.Request) {
	if ss == nil {
		return
	}
	p, ok := req.GetParams().(*mcp.CancelledParams)
	if !ok || p == nil {
		return
	}
	if e := h.fastSessions.lookup(ss.ID()); e != nil && e.ss == ss {
		if e.calls.cancel(p.RequestID) {
			h.log.Debug("call cancelled by the client", "session", ss.ID(), "request", fmt.Sprint(p.RequestID))
		}
	}
}

package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/sessionless"
)

// A cached tools/list answer is written straight from the encoded listing
// of the caller's view, ahead of the go-sdk's streamable HTTP handler.
//
// Why: the go-sdk encodes a result and then compacts the whole message
// again, so a listing of 1000 tools (480 KB) cost 8 to 10 ms of JSON work
// per request, the same from a plain go-sdk server (docs/BENCHMARKS.md).
// The view is already cached per caller; its encoding is now cached with it.
//
// Only the plainest request takes the shortcut: a POST carrying one
// tools/list request without a cursor (with or without _meta, which then
// describes the caller exactly as on the go-sdk path), on a session that the
// go-sdk established and that completed its initialisation through the
// middleware, at a protocol version up to 2025-11-25 (later versions have
// the go-sdk annotate results), without the go-sdk's TokenInfo (the view
// would depend on the identity), and recently enough in touch with the
// go-sdk that its idle timer is far from expiring (the shortcut does not
// reset it). Anything else, and anything this code cannot read, goes to the
// go-sdk unchanged, which answers it as it always did.

// maxFastListBody is the longest request body the shortcut reads; a plain
// tools/list request is well under it.
const maxFastListBody = 1024

// fastListSessions are the streamable HTTP sessions the shortcut may serve,
// by Mcp-Session-Id.
type fastListSessions struct {
	m sync.Map // session ID -> *fastListSession

	mu        sync.Mutex
	listening map[string]int // session ID -> standalone (GET) streams open
}

// listen counts a standalone stream of session id until done is called.
func (f *fastListSessions) listen(id string) (done func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listening == nil {
		f.listening = map[string]int{}
	}
	f.listening[id]++
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.listening[id]--; f.listening[id] <= 0 {
			delete(f.listening, id)
		}
	}
}

// listens reports whether session id has a standalone stream open.
func (f *fastListSessions) listens(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.listening[id] > 0
}

type fastListSession struct {
	ss       *mcp.ServerSession
	version  string
	lastSeen atomic.Int64 // unix nanoseconds of the last request the go-sdk handled
	calls    fastCalls    // tools/call requests the shortcut is answering
}

// seen records a request of ss that went through the go-sdk: on
// notifications/initialized the session becomes eligible; any request
// refreshes its idle clock.
func (f *fastListSessions) seen(ss *mcp.ServerSession, method string) {
	id := ss.ID()
	if id == "" {
		return
	}
	now := time.Now().UnixNano()
	if e, ok := f.m.Load(id); ok {
		e.(*fastListSession).lastSeen.Store(now)
		return
	}
	if method != "notifications/initialized" {
		return
	}
	ip := ss.InitializeParams()
	if ip == nil || !wire.PlainVersions[ip.ProtocolVersion] {
		return
	}
	e := &fastListSession{ss: ss, version: ip.ProtocolVersion}
	e.lastSeen.Store(now)
	f.m.Store(id, e)
}

func (f *fastListSessions) forget(ss *mcp.ServerSession) {
	if e := f.lookup(ss.ID()); e != nil && e.ss == ss {
		f.m.CompareAndDelete(ss.ID(), e)
		e.calls.cancelAll()
	}
}

func (f *fastListSessions) lookup(id string) *fastListSession {
	e, ok := f.m.Load(id)
	if !ok {
		return nil
	}
	return e.(*fastListSession)
}

// shortcutHandler serves eligible tools/list (fastList) and tools/call
// (fastCall, fastcall.go) requests to /mcp and hands every other request to
// next, the go-sdk's streamable HTTP handler.
func (h *Host) shortcutHandler(next http.Handler, sessionTimeout time.Duration, maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("Mcp-Session-Id"); r.Method == http.MethodGet && id != "" {
			// Where the shortcut's calls send what they ask the client
			// (fastcall.go).
			defer h.fastSessions.listen(id)()
		}
		e := h.fastListSession(r, sessionTimeout)
		if e == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, whole := readShortBody(r, maxBody)
		if whole {
			// Most requests are neither: a substring check spares them
			// the parse.
			switch {
			case len(body) <= maxFastListBody && bytes.Contains(body, []byte(`"tools/list"`)):
				if h.fastList(w, r, e, body) {
					return
				}
			case bytes.Contains(body, []byte(`"tools/call"`)):
				if h.fastCall(w, r, e, body) {
					return
				}
			}
		}
		restoreBody(r, body, whole)
		next.ServeHTTP(w, r)
	})
}

// restoreBody puts back what readShortBody read of r's body: all of it
// (whole), or the part before the rest.
func restoreBody(r *http.Request, body []byte, whole bool) {
	if whole {
		r.Body = io.NopCloser(bytes.NewReader(body))
		return
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
}

// readShortBody reads r's body when it is short enough for a shortcut (its
// declared length, or at most maxFastListBody bytes when it declares none)
// and within maxBody (listen.max_body_bytes, which the go-sdk enforces).
// whole is false when it read only a part, which it returns.
func readShortBody(r *http.Request, maxBody int64) (body []byte, whole bool) {
	limit := int64(maxFastListBody)
	if r.ContentLength > 0 {
		limit = r.ContentLength
	}
	if limit > maxFastCallBody || (maxBody > 0 && limit > maxBody) {
		return nil, false
	}
	// One byte more than expected, to see the end: net/http lifts the
	// read deadline only once the body has been read to EOF.
	body = make([]byte, limit+1)
	n, err := io.ReadFull(r.Body, body)
	body = body[:n]
	return body, err == io.ErrUnexpectedEOF || err == io.EOF
}

// fastList answers body, a request of session e, if it is a plain
// tools/list, and reports whether it did.
func (h *Host) fastList(w http.ResponseWriter, r *http.Request, e *fastListSession, body []byte) bool {
	id, meta, ok := wire.ParseToolsList(body)
	// A request that names its protocol version in _meta may follow
	// 2026-07-28, whose results the go-sdk annotates.
	if ok && bytes.Contains(meta, []byte(mcp.MetaKeyProtocolVersion)) {
		ok = false
	}
	var callerMeta json.RawMessage
	if ok && meta != nil {
		callerMeta, ok = fastListMeta(meta)
	}
	if !ok || h.searchExposure(context.Background()) != nil { // a toolset's session is never here
		return false // a search listing is the session's own: the go-sdk path has it
	}
	caller := h.sessionCaller(e.ss, DownstreamHTTP)
	caller.Meta = callerMeta
	v, err := h.view(r.Context(), caller)
	var listing []byte
	if err == nil {
		listing, err = v.encoded()
	}
	if err != nil {
		return false // the go-sdk path reports the error as a JSON-RPC error
	}
	head := make([]byte, 0, 32+len(id))
	head = append(append(append(head, `{"jsonrpc":"2.0","id":`...), id...), `,"result":`...)
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(len(head)+len(listing)+2))
	hdr.Set("Mcp-Session-Id", e.ss.ID())
	_, _ = w.Write(head)
	_, _ = w.Write(listing)
	_, _ = w.Write([]byte("}\n"))
	return true
}

// fastListSession returns the session r may be answered for from the
// headers alone, or nil.
func (h *Host) fastListSession(r *http.Request, sessionTimeout time.Duration) *fastListSession {
	if h.noShortcuts || r.Method != http.MethodPost || r.Body == nil {
		return nil
	}
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		return nil
	}
	e := h.fastSessions.lookup(id)
	if e == nil || r.Header.Get("Mcp-Protocol-Version") != e.version {
		return nil
	}
	if len(r.Header.Values("Last-Event-ID")) > 0 {
		return nil // the go-sdk refuses it on a POST
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return nil
	}
	if !wire.AcceptsBoth(r.Header.Values("Accept")) { // the Host was checked in front (checkOrigin)
		return nil
	}
	if auth.TokenInfoFromContext(r.Context()) != nil {
		return nil
	}
	if sessionTimeout > 0 && time.Since(time.Unix(0, e.lastSeen.Load())) > sessionTimeout/2 {
		return nil
	}
	return e
}

// encoded returns the view's tools/list result as the go-sdk would encode
// it (no HTML escaping), computed once per view.
func (v *view) encoded() ([]byte, error) {
	v.encOnce.Do(func() {
		// The shortcut serves protocols before 2026-07-28 only, which do
		// not define the cache hints.
		v.enc, v.encErr = wire.EncodeJSON(&catalog.PriorListTools{ListToolsResult: v.result, Execution: v.exec})
	})
	return v.enc, v.encErr
}

// fastListMeta reads a tools/list request's _meta as the go-sdk's path
// does (its decoder into mcp.Meta, then sessionless.CallerMeta), so that the shortcut
// asks for the very view, and gets the very bytes, that the go-sdk's
// handler would.
func fastListMeta(raw json.RawMessage) (json.RawMessage, bool) {
	m, ok := wire.DecodeMeta(raw)
	if !ok {
		return nil, false
	}
	return sessionless.CallerMeta(m), true
}

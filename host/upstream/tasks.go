package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP tasks (2025-11-25) toward servers that offer them: the go-sdk's
// client knows neither the tasks capability nor the tasks methods, so
// mcphost reads the capability off the initialize answer as it passes
// (initCapture) and sends task requests itself: on a wrapped connection
// (stdio, SSE, internal) as raw requests, and to a streamable HTTP server
// as POSTs of their own on the session (its Mcp-Session-Id), whose answer
// it reads. What such a server asks the client during a task (elicitation,
// sampling) reaches the go-sdk's client on the session's standalone
// stream, and the gateway routes it as any such request.

// maxInitCapture bounds what is kept of an initialize answer.
const maxInitCapture = 256 << 10

// initCapture keeps the bytes of a session's initialize answer.
type initCapture struct {
	mu   sync.Mutex
	b    []byte
	done bool // a tapped connection's first answer was taken
}

func (c *initCapture) add(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := maxInitCapture - len(c.b); n > 0 {
		c.b = append(c.b, p[:min(n, len(p))]...)
	}
}

// first keeps a tapped connection's first response: initialize's.
func (c *initCapture) first(result json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done {
		c.done, c.b = true, append([]byte(nil), result...)
	}
}

func (c *initCapture) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b
}

// captureBody copies what the go-sdk reads of an initialize answer.
type captureBody struct {
	io.ReadCloser
	c *initCapture
}

func (b captureBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.c.add(p[:n])
	return n, err
}

// OffersTasks reports whether an initialize answer (a result, a JSON-RPC
// response, or an event stream carrying one) offers tools/call as a task.
func OffersTasks(answer []byte) bool {
	docs := [][]byte{answer}
	for _, line := range bytes.Split(answer, []byte("\n")) {
		if d, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:")); ok {
			docs = append(docs, d)
		}
	}
	type caps struct {
		Tasks *struct {
			Requests *struct {
				Tools *struct {
					Call *json.RawMessage `json:"call"`
				} `json:"tools"`
			} `json:"requests"`
		} `json:"tasks"`
	}
	offers := func(c caps) bool {
		return c.Tasks != nil && c.Tasks.Requests != nil && c.Tasks.Requests.Tools != nil && c.Tasks.Requests.Tools.Call != nil
	}
	for _, d := range docs {
		var m struct {
			Capabilities caps
			Result       struct{ Capabilities caps }
		}
		if json.Unmarshal(d, &m) == nil && (offers(m.Capabilities) || offers(m.Result.Capabilities)) {
			return true
		}
	}
	return false
}

// taskConn is what a session needs for task requests.
type taskConn struct {
	offers bool
	url    string       // a streamable HTTP server's endpoint; "" otherwise
	client *http.Client // for it
}

// noteTasks records, after connecting, whether cs's server offers tasks.
func (u *Server) noteTasks(cs *mcp.ClientSession, spec dialSpec, c *initCapture, oauth bool) {
	tc := &taskConn{offers: OffersTasks(c.bytes()) && !oauth}
	if spec.cfg.Transport == TransportStreamableHTTP {
		tc.url, tc.client = spec.cfg.URL, headerClient(spec.cfg.Headers)
		if tc.client == nil {
			tc.client = http.DefaultClient
		}
	}
	u.taskConns.Store(cs, tc)
	go func() { _ = cs.Wait(); u.taskConns.Delete(cs) }()
	u.offersTasks.Store(tc.offers) // the latest connect says
}

// OffersTasks reports whether the server offered tools/call as a task the
// last time a session to it connected. (A server behind OAuth is not used so: the
// requests mcphost sends itself do not carry its tokens.)
func (u *Server) OffersTasks() bool { return u.offersTasks.Load() }

// ErrNoTasks says a session's server does not offer tasks.
var ErrNoTasks = errors.New("the server does not offer tasks")

// TaskRequest sends a request of the tasks protocol (a tools/call with a
// task, or a tasks/* method) on cs and returns its result as sent.
func (u *Server) TaskRequest(ctx context.Context, cs *mcp.ClientSession, method string, params json.RawMessage) (json.RawMessage, error) {
	v, _ := u.taskConns.Load(cs)
	tc, _ := v.(*taskConn)
	if tc == nil || !tc.offers {
		return nil, fmt.Errorf("server %q: %w", u.Config.Name, ErrNoTasks)
	}
	if c := u.RawConn(cs); c != nil {
		return c.Request(ctx, method, params)
	}
	if tc.url == "" {
		return nil, fmt.Errorf("server %q: %w", u.Config.Name, ErrNoTasks)
	}
	version := ""
	if ir := cs.InitializeResult(); ir != nil {
		version = ir.ProtocolVersion
	}
	return postRequest(ctx, tc.client, tc.url, cs.ID(), version, u.taskIDs.Add(1), method, params)
}

// postRequest sends one request to a streamable HTTP server on session sid
// and reads its response from a JSON or an event-stream answer.
func postRequest(ctx context.Context, client *http.Client, url, sid, version string, n uint64, method string, params json.RawMessage) (json.RawMessage, error) {
	id := "mcphost-task-" + strconv.FormatUint(n, 10)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("calling %q: %w", method, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("calling %q: HTTP %d: %s", method, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if !isEventStream(resp.Header.Get("Content-Type")) {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("calling %q: %w", method, err)
		}
		return responseFor(method, id, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
			if res, err := responseFor(method, id, []byte(d)); !errors.Is(err, errOtherMessage) {
				return res, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("calling %q: %w", method, err)
	}
	return nil, fmt.Errorf("calling %q: %w: the stream ended without an answer", method, mcp.ErrConnectionClosed)
}

var errOtherMessage = errors.New("another message")

// responseFor reads b as the response to request id.
func responseFor(method, id string, b []byte) (json.RawMessage, error) {
	msg, err := jsonrpc.DecodeMessage(bytes.TrimSpace(b))
	if err != nil {
		return nil, errOtherMessage
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.ID.Raw() != id {
		return nil, errOtherMessage
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("calling %q: %w", method, resp.Error)
	}
	if r := bytes.TrimSpace(resp.Result); len(r) == 0 || bytes.Equal(r, []byte("null")) {
		return nil, fmt.Errorf("calling %q: the reply has neither a result nor an error", method)
	}
	return resp.Result, nil
}

// Request sends any request on the connection and returns its result as
// sent (CallTool is this, for tools/call).
func (c *TapConn) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	id, reply, err := c.Raw.add()
	if err != nil {
		return nil, NotSent{Err: err}
	}
	jid, _ := jsonrpc.MakeID(id)
	if err := c.Connection.Write(ctx, &jsonrpc.Request{ID: jid, Method: method, Params: params}); err != nil {
		c.Raw.remove(id)
		return nil, fmt.Errorf("%w: calling %q: %v", mcp.ErrConnectionClosed, method, err)
	}
	select {
	case resp := <-reply:
		if resp.Error != nil {
			if errors.Is(resp.Error, mcp.ErrConnectionClosed) {
				return nil, resp.Error
			}
			return nil, fmt.Errorf("calling %q: %w", method, resp.Error)
		}
		if r := bytes.TrimSpace(resp.Result); len(r) == 0 || bytes.Equal(r, []byte("null")) {
			return nil, fmt.Errorf("calling %q: the reply has neither a result nor an error", method)
		}
		return resp.Result, nil
	case <-ctx.Done():
		c.Raw.remove(id)
		go c.cancelled(id, context.Cause(ctx))
		return nil, ctx.Err()
	}
}

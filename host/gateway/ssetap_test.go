package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// A log message an HTTP upstream sends during a call reaches the client on
// that call's stream, ahead of the call's result: without the tap, the
// go-sdk retires the response before its handler goroutine sees the log,
// and the log, no longer matched to a call, goes astray.
func TestHTTPUpstreamLogPrecedesResult(t *testing.T) {
	addr := testproc.FreeAddr(t)
	startProcess(t, addr, upstreamBin, "-http="+addr, "-name", "web")
	h := startHost(t, Config{Servers: []upstream.ServerConfig{
		{Name: "web", Transport: upstream.TransportStreamableHTTP, URL: "http://" + addr},
	}}, nil)
	c := &rawClient{t: t, url: httptestServer(t, h) + "/mcp"}
	c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.post(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}`)
	for i := range 40 {
		msg := fmt.Sprintf("note-%d", i)
		events := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"web__log","arguments":{"text":%q}}}`, 10+i, msg))
		if len(events) != 2 || !strings.Contains(events[0], `"notifications/message"`) || !strings.Contains(events[0], msg) || !strings.Contains(events[1], `"result"`) {
			t.Fatalf("call %d: the call's stream holds %q, want its log message, then its result", i, events)
		}
	}
}

// rawClient speaks streamable HTTP by hand, to see the order of the events
// on one request's stream, which a go-sdk client does not show.
type rawClient struct {
	t       *testing.T
	url     string
	session string
}

// post sends one message and returns the data of every event in its answer.
func (c *rawClient) post(body string) []string {
	c.t.Helper()
	req, err := http.NewRequest("POST", c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("POST %s: %s %s", body, resp.Status, b)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.session = id
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		if len(bytes.TrimSpace(b)) == 0 {
			return nil
		}
		return []string{string(b)}
	}
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
			events = append(events, strings.TrimSpace(data))
		}
	}
	if err := sc.Err(); err != nil {
		c.t.Fatal(err)
	}
	return events
}

// The tap passes every stream through byte for byte when it takes nothing,
// and otherwise only drops lines: whatever the upstream sends, read in
// pieces of any size.
func FuzzSSETap(f *testing.F) {
	f.Add([]byte("id: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"), 3)
	f.Add([]byte("event: message\r\ndata: {\"method\":\r\ndata: \"notifications/progress\"}\r\nretry: 10\r\n\r\n"), 1)
	f.Add([]byte(": comment\n\ndata: "+strings.Repeat("x", upstream.MaxTapEvent+10)+"\n\n"), 4096)
	f.Add([]byte("data: {\"id\":1,\"method\":\"notifications/message\"}"), 7)
	f.Fuzz(func(t *testing.T, stream []byte, chunk int) {
		if chunk <= 0 || chunk > 1<<16 {
			chunk = 1
		}
		for _, take := range []bool{false, true} {
			taken := 0
			body := &upstream.SSETapBody{
				Src: io.NopCloser(bytes.NewReader(stream)),
				R:   bufio.NewReaderSize(bytes.NewReader(stream), 16),
				Tap: func(string, json.RawMessage) bool { taken++; return take },
			}
			var out []byte
			buf := make([]byte, chunk)
			for reads := 0; ; reads++ {
				if reads > 2*len(stream)+2 {
					t.Fatalf("no end after %d reads of a %d-byte stream", reads, len(stream))
				}
				n, err := body.Read(buf)
				out = append(out, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if !take {
				if !bytes.Equal(out, stream) {
					t.Fatalf("tap taking nothing changed the stream:\n in %q\nout %q", stream, out)
				}
				continue
			}
			if taken == 0 && !bytes.Equal(out, stream) {
				t.Fatalf("no event taken, yet the stream changed:\n in %q\nout %q", stream, out)
			}
			if !isLineSubsequence(out, stream) {
				t.Fatalf("the tap did more than drop lines:\n in %q\nout %q", stream, out)
			}
		}
	})
}

// isLineSubsequence reports whether every line of out appears in in, in order.
func isLineSubsequence(out, in []byte) bool {
	inLines := bytes.SplitAfter(in, []byte("\n"))
	for _, l := range bytes.SplitAfter(out, []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		for len(inLines) > 0 && !bytes.Equal(inLines[0], l) {
			inLines = inLines[1:]
		}
		if len(inLines) == 0 {
			return false
		}
		inLines = inLines[1:]
	}
	return true
}

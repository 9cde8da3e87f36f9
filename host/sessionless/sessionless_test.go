package sessionless

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}}}`

var readBodies = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"x"},` + meta + `}}`,
	`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"a__echo",` + meta + `}}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + meta + `}}`,
	`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a__echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"trace":"t"}}}`,
	`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"a__echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"debug"}}}`,
	`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"a__echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}}`,
	`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"a__echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}}`,
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a__echo","requestState":"x",` + meta + `}}`,
	`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"a__echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":null}}}`,
}

// request returns a POST of body with the headers a 2026-07-28 client
// sends, Mcp-Method and Mcp-Name as method and name.
func request(method, name string) *http.Request {
	r, _ := http.NewRequest("POST", "/mcp", nil)
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method} {
		r.Header.Set(k, v)
	}
	if name != "" {
		r.Header.Set("Mcp-Name", name)
	}
	return r
}

// methodAndName reads the method and tool name of body loosely, for the
// headers a client would send with it.
func methodAndName(body []byte) (string, string) {
	var m struct {
		Method string
		Params struct{ Name string }
	}
	_ = json.Unmarshal(body, &m)
	return m.Method, m.Params.Name
}

// TestRead: which requests the shortcut takes, and what it reads of them.
func TestRead(t *testing.T) {
	var rd Reader
	want := []bool{true, true, true, true, false, false, false, false, false}
	for i, body := range readBodies {
		method, name := methodAndName([]byte(body))
		req, ok := rd.Read(request(method, name), []byte(body))
		if ok != want[i] {
			t.Errorf("%s: taken %v, want %v", body, ok, want[i])
			continue
		}
		if i == 0 && (req.Name != "a__echo" || string(req.Args) != `{"text":"x"}` || req.Client.Name != "c" || req.ID != mustID(float64(1))) {
			t.Errorf("read %+v", req)
		}
	}
	// The headers must agree with the body.
	body := []byte(readBodies[0])
	for _, r := range []*http.Request{request("tools/list", ""), request("tools/call", "other"), request("tools/call", "")} {
		if _, ok := rd.Read(r, body); ok {
			t.Errorf("taken with Mcp-Method %q, Mcp-Name %q", r.Header.Get("Mcp-Method"), r.Header.Get("Mcp-Name"))
		}
	}
	r := request("tools/call", "a__echo")
	r.Header.Set("Mcp-Param-Text", "x")
	if _, ok := rd.Read(r, body); ok {
		t.Error("taken with an Mcp-Param header")
	}
	r = request("tools/call", "a__echo")
	r.Header.Set("Mcp-Session-Id", "s")
	if _, ok := rd.Read(r, body); ok {
		t.Error("taken with a session id")
	}
}

func mustID(v any) jsonrpc.ID {
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		panic(err)
	}
	return id
}

// FuzzRead holds what Read takes to the go-sdk's reading of the same
// request: one tools/call or tools/list call whose id, tool, arguments and
// _meta are the go-sdk's, whose _meta names 2026-07-28 and carries client
// capabilities, and, asked twice (the second from the Reader's memory),
// reads the same.
func FuzzRead(f *testing.F) {
	for _, b := range readBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		method, name := methodAndName(body)
		var rd Reader
		req, ok := rd.Read(request(method, name), body)
		if !ok {
			return
		}
		msg, err := jsonrpc.DecodeMessage(body)
		if err != nil {
			t.Fatalf("took %q, which the go-sdk does not decode: %v", body, err)
		}
		call, isCall := msg.(*jsonrpc.Request)
		if !isCall || !call.IsCall() || call.Method != req.Method || call.ID != req.ID {
			t.Fatalf("took %q as %s %v, the go-sdk reads %#v", body, req.Method, req.ID.Raw(), msg)
		}
		var p struct {
			Meta      mcp.Meta        `json:"_meta"`
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if _, err := segjson.Parse(call.Params, &p, segjson.DontMatchCaseInsensitiveStructFields); err != nil {
			t.Fatalf("took %q, whose params the go-sdk does not decode: %v", body, err)
		}
		if p.Name != req.Name || !reflect.DeepEqual(p.Meta, req.Meta) {
			t.Fatalf("took %q as %q %v, the go-sdk reads %q %v", body, req.Name, req.Meta, p.Name, p.Meta)
		}
		if v := p.Meta[mcp.MetaKeyProtocolVersion]; v != Version || p.Meta[mcp.MetaKeyClientCapabilities] == nil {
			t.Fatalf("took %q, whose _meta is not of 2026-07-28: %v", body, p.Meta)
		}
		again, ok := rd.Read(request(method, name), body)
		if !ok || !reflect.DeepEqual(again, req) {
			t.Fatalf("read %q again as %+v, first %+v", body, again, req)
		}
	})
}

// TestStates: a state opens under its key only, not changed, not after it
// expires, with or without a replica name in front (which is outside the
// seal), and carries what was sealed.
func TestStates(t *testing.T) {
	key := make([]byte, KeySize)
	key[0] = 1
	s, err := NewStates(key)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	st := &State{Call: "c1", Owner: "o", What: "tools/call x", Args: Digest("args", json.RawMessage(`{}`)), Expires: now.Add(time.Minute).Unix(),
		Answers: []Answer{{Question: "q", Response: json.RawMessage(`{"action":"accept"}`)}}, Asked: map[string]string{"mcphost-1": "q2"}}
	sealed, err := s.Seal("mcphost2", st)
	if err != nil || !strings.HasPrefix(sealed, "mcphost2.v1:") {
		t.Fatalf("Seal = %q, %v", sealed, err)
	}
	for _, state := range []string{sealed, strings.TrimPrefix(sealed, "mcphost2."), "mcphost3." + strings.TrimPrefix(sealed, "mcphost2.")} {
		got, err := s.Open(state, now)
		if err != nil || !reflect.DeepEqual(got, st) {
			t.Errorf("Open(%q) = %+v, %v; want %+v", state, got, err, st)
		}
	}
	other := make([]byte, KeySize)
	s2, _ := NewStates(other)
	changed := []byte(sealed)
	changed[len(changed)-3] ^= 1
	for name, try := range map[string]func() error{
		"another key":  func() error { _, err := s2.Open(sealed, now); return err },
		"changed":      func() error { _, err := s.Open(string(changed), now); return err },
		"expired":      func() error { _, err := s.Open(sealed, now.Add(2*time.Minute)); return err },
		"not a state":  func() error { _, err := s.Open("3f9c00", now); return err },
		"empty":        func() error { _, err := s.Open("", now); return err },
		"route only":   func() error { _, err := s.Open("mcphost2.", now); return err },
		"a short key":  func() error { _, err := NewStates(key[:16]); return err },
		"a nil answer": func() error { _, err := DecodeAnswer(json.RawMessage(`[`)); return err },
	} {
		if err := try(); err == nil || name != "a short key" && name != "a nil answer" && !errors.Is(err, ErrState) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzOpen: no input makes Open fail other than with ErrState, or open
// without the key.
func FuzzOpen(f *testing.F) {
	s, _ := NewStates(make([]byte, KeySize))
	sealed, _ := s.Seal("r", &State{Call: "c", Expires: time.Now().Add(time.Hour).Unix()})
	f.Add(sealed)
	f.Add("v1:AAAA")
	f.Add("a.b.c")
	f.Fuzz(func(t *testing.T, state string) {
		st, err := s.Open(state, time.Now())
		if err != nil && !errors.Is(err, ErrState) {
			t.Fatalf("Open(%q): %v", state, err)
		}
		if err == nil && st.Call != "c" {
			t.Fatalf("Open(%q) opened %+v, which was never sealed", state, st)
		}
	})
}

// BenchmarkRead is the shortcut's reading of a tools/call, headers and
// body, with its _meta remembered (as for every request of a client after
// its first).
func BenchmarkRead(b *testing.B) {
	body := []byte(readBodies[0])
	r := request("tools/call", "a__echo")
	var rd Reader
	for b.Loop() {
		if _, ok := rd.Read(r, body); !ok {
			b.Fatal("not taken")
		}
	}
}

// TestEncodeResult: the server info goes into a result's _meta, and
// resultType "complete" beside it, as the go-sdk puts them there, whether
// the result is the upstream's bytes (with or without a _meta or a
// resultType of their own, what the upstream set staying) or typed.
func TestEncodeResult(t *testing.T) {
	impl := &mcp.Implementation{Name: "gw", Version: "1"}
	info := map[string]any{"name": "gw", "version": "1"}
	for _, raw := range []string{
		`{}`, ` { } `, `{"content":[{"type":"text","text":"x"}]}`,
		`{"_meta":{"trace":"t"},"content":[]}`,
		`{"\u005fmeta":{"trace":"t"},"content":[]}`,
		`{"_meta":{"io.modelcontextprotocol/serverInfo":"upstream's"},"content":[]}`,
		`{"resultType":"input_required","content":[]}`,
		`{"_meta":{"trace":"t"},"resultType":"complete","content":[]}`,
	} {
		var typed mcp.CallToolResult
		if err := json.Unmarshal([]byte(raw), &typed); err != nil {
			t.Fatal(err)
		}
		got, err := EncodeResult(&typed, json.RawMessage(raw), impl)
		if err != nil {
			t.Fatal(err)
		}
		var v, want map[string]any
		if err := json.Unmarshal(got, &v); err != nil {
			t.Fatalf("%s: %s: %v", raw, got, err)
		}
		_ = json.Unmarshal([]byte(raw), &want)
		meta, _ := want["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		if _, ok := meta[mcp.MetaKeyServerInfo]; !ok {
			meta[mcp.MetaKeyServerInfo] = info
		}
		want["_meta"] = meta
		if want["resultType"] == nil {
			want["resultType"] = "complete"
		}
		if !reflect.DeepEqual(v, want) {
			t.Errorf("%s: encoded %s, want %v", raw, got, want)
		}
	}
}

// TestWorkers: every function given runs, at once when the workers are
// busy, and one given after another finished runs on a kept worker.
func TestWorkers(t *testing.T) {
	var w Workers
	release := make(chan struct{})
	done := make(chan int, 20)
	for i := range 10 { // each holds its worker until released: ten at once
		w.Go(func() { <-release; done <- i })
	}
	close(release)
	for range 10 {
		<-done
	}
	for i := range 10 { // one after another, on the kept ones
		w.Go(func() { done <- i })
		if got := <-done; got != i {
			t.Fatalf("ran %d, want %d", got, i)
		}
	}
}

// TestParked: a parked call is taken once by the name its state carries;
// a state is used once per replica; a call not taken within the timeout
// is cancelled; CancelAll cancels the rest.
func TestParked(t *testing.T) {
	s, _ := NewStates(make([]byte, KeySize))
	p := &Parked[*int]{States: s, Timeout: 200 * time.Millisecond}
	a, b := new(int), new(int)
	cancelled := make(chan *int, 2)
	stateA, err := p.Park(a, func() { cancelled <- a }, "r1", &State{Owner: "o", What: "w"})
	if err != nil || !strings.HasPrefix(stateA, "r1.") {
		t.Fatalf("Park = %q, %v", stateA, err)
	}
	st, err := p.Open(stateA)
	if err != nil || st.Owner != "o" || st.Call == "" {
		t.Fatalf("Open = %+v, %v", st, err)
	}
	if p.Waiting() != 1 || p.Use(st.Call) || !p.Use(st.Call) {
		t.Fatalf("waiting %d; a state used twice must say so the second time", p.Waiting())
	}
	if got := p.Take(st.Call); got != a || p.Take(st.Call) != nil {
		t.Fatalf("Take = %p, want %p once", got, a)
	}
	if _, err := p.Park(b, func() { cancelled <- b }, "", &State{What: "w"}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-cancelled:
		if got != b {
			t.Fatalf("cancelled %p, want the call never taken (%p)", got, b)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a call not taken within the timeout was not cancelled")
	}
	c := new(int)
	p.Timeout = time.Hour
	_, _ = p.Park(c, func() { cancelled <- c }, "", &State{What: "w"})
	p.CancelAll()
	if got := <-cancelled; got != c || p.Waiting() != 0 {
		t.Fatalf("CancelAll cancelled %p (want %p), %d left", got, c, p.Waiting())
	}
}

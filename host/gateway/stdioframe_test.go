package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// TestServeStdioSurvivesBadLines sends a stdio session lines that are not
// JSON-RPC messages between real requests: each gets a JSON-RPC error with
// id null and the session goes on.
func TestServeStdioSurvivesBadLines(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.ServeStdio(ctx, inR, outW) }()
	out := bufio.NewReader(outR)

	type reply struct {
		ID     any `json:"id"`
		Error  *struct{ Code int }
		Result json.RawMessage
	}
	exchange := func(line string) reply {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatalf("writing %q: %v (the session ended)", line, err)
		}
		got := make(chan string, 1)
		go func() { s, _ := out.ReadString('\n'); got <- s }()
		select {
		case s := <-got:
			var r reply
			if err := json.Unmarshal([]byte(s), &r); err != nil {
				t.Fatalf("answer to %q: %q: %v", line, s, err)
			}
			return r
		case err := <-done:
			t.Fatalf("the session ended after %q: %v", line, err)
		case <-time.After(30 * time.Second):
			t.Fatalf("no answer to %q", line)
		}
		return reply{}
	}

	bad := []struct {
		line string
		code int
	}{
		{"hello, is this thing on?", -32700},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"`, -32700},
		{`{"a":1}{"b":2}`, -32700},
		{`{}`, -32600},
		{`42`, -32600},
		{`[]`, -32600},
		{`[{"jsonrpc":"2.0","id":9,"method":"ping"}]`, -32600},
		{"\xff\xfe", -32700},
	}
	for _, b := range bad {
		r := exchange(b.line)
		if r.Error == nil || r.Error.Code != b.code || r.ID != nil {
			t.Errorf("answer to %q: %+v, want error %d with id null", b.line, r, b.code)
		}
	}
	r := exchange(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if r.Error != nil || r.ID != float64(1) {
		t.Fatalf("initialize after bad lines: %+v", r)
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	exchange("not json either")
	r = exchange(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"still here"}}}`)
	if r.Error != nil || !strings.Contains(string(r.Result), "still here") {
		t.Fatalf("a call after bad lines: %+v %s", r, r.Result)
	}
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ServeStdio at EOF: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ServeStdio did not end at EOF")
	}
}

// FuzzCheckFrame feeds arbitrary lines to the stdio frame check: it must
// not panic, and a line it passes must be one the go-sdk can decode.
func FuzzCheckFrame(f *testing.F) {
	for _, s := range []string{"", "x", "{}", "[]", `[{"jsonrpc":"2.0","method":"m"}]`, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"result":{}}`, "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		msg, ans := wire.CheckFrame(line, false)
		if ans == nil && (!json.Valid(line) || msg == nil) {
			t.Fatalf("passed invalid JSON %q", line)
		}
		if ans != nil && !json.Valid(ans) {
			t.Fatalf("answer %q is not JSON", ans)
		}
	})
}

// FuzzResponseID checks the quick reading of the messages the go-sdk writes
// against a full decode: the same answer for every JSON text (the go-sdk
// writes nothing else; the quick reading does not validate what it skips).
func FuzzResponseID(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":"a\\\"b,","error":{"code":1,"message":"m"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"sampling/createMessage","params":{}}`, `{"jsonrpc":"2.0","method":"notifications/message"}`,
		`{"jsonrpc":"2.0","id":-7,"result":{"content":[]}}`, `{"jsonrpc":"2.0","id":1.5,"result":{}}`, `{"jsonrpc":"2.0","id":"x"}`, `[]`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		if !json.Valid(p) {
			return
		}
		got, ok := wire.ResponseID(p)
		want, wantOK := wire.DecodedResponseID(p)
		if ok && (!wantOK || got != want) {
			t.Fatalf("responseID(%q) = %q, %v; a full decode says %q, %v", p, got, ok, want, wantOK)
		}
	})
}

// TestServeStdioAnswersBeforeEOF pipes requests and closes the input at
// once, as a client that sends its requests and closes stdin does: every
// request is still answered, and ServeStdio then ends.
func TestServeStdioAnswersBeforeEOF(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a__sleep","arguments":{"millis":300}}}`,
		`{"jsonrpc":"2.0","id":"three","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"a__sleep","arguments":{"millis":60000}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}`,
	}, "\n") + "\n"
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- h.ServeStdio(context.Background(), io.NopCloser(strings.NewReader(in)), outW) }()
	answered := map[string]bool{}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	note := func(l string) {
		var r struct{ ID any }
		if err := json.Unmarshal([]byte(l), &r); err == nil && r.ID != nil {
			answered[fmt.Sprint(r.ID)] = true
		}
	}
	var ended bool
	for !ended && (!answered["1"] || !answered["2"] || !answered["three"]) {
		select {
		case l := <-lines:
			note(l)
		case err := <-done:
			// The last answer may still be on its way through the pipe
			// (ServeStdio ends as soon as it is written): read what is
			// left before judging.
			if err != nil {
				t.Fatal(err)
			}
			ended = true
			outW.Close()
			for l := range lines {
				note(l)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("answers to %v only", answered)
		}
	}
	if !answered["1"] || !answered["2"] || !answered["three"] {
		t.Fatalf("ServeStdio ended with answers to %v only", answered)
	}
	if !ended {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("ServeStdio did not end after answering (the cancelled call 4 is not waited for)")
		}
	}
	outW.Close()
}

package upstream

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/internal/jsondiff"
)

// readPipe reads stream through a pipeReader and returns what the go-sdk
// would read and the responses taken off for raw calls.
func readPipe(t testing.TB, stream string) (passed string, diverted []*jsonrpc.Response) {
	r := newPipeReader(strings.NewReader(stream))
	r.divertTo(pipeSinks{deliver: func(resp *jsonrpc.Response) bool {
		diverted = append(diverted, resp)
		return true
	}, tap: func(string, json.RawMessage) bool { return false }})
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), diverted
}

func TestPipeReaderTakesOffOnlyRawReplies(t *testing.T) {
	t.Parallel()
	reply := `{"jsonrpc":"2.0","id":"mcphost-1","result":{"content":[{"type":"text","text":"a\"mcphost-2"}]}}`
	errReply := `{"error":{"code":-32602,"message":"no"},"id":"mcphost-3","jsonrpc":"2.0"}`
	deep := `{"jsonrpc":"2.0","id":"mcphost-1","result":{"x":` + strings.Repeat("[", wire.MaxJSONDepth) + strings.Repeat("]", wire.MaxJSONDepth) + `}}`
	for _, tc := range []struct {
		name, stream, passed string
		diverted             int
	}{
		{"a reply", reply + "\n", "", 1},
		{"an error reply, members in any order", errReply + "\r\n", "", 1},
		{"the go-sdk's own calls", `{"jsonrpc":"2.0","id":4,"result":{}}` + "\n", `{"jsonrpc":"2.0","id":4,"result":{}}` + "\n", 0},
		{"a notification naming a raw id", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"mcphost-1"}}` + "\n",
			`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"mcphost-1"}}` + "\n", 0},
		{"inside a value spread over lines", "[\n" + reply + "\n]\n", "[\n" + reply + "\n]\n", 0},
		{"after a value spread over lines", "{\"jsonrpc\":\"2.0\",\n\"id\":5,\"result\":{}}\n" + reply + "\n", "{\"jsonrpc\":\"2.0\",\n\"id\":5,\"result\":{}}\n", 1},
		{"a reply with an unknown member", `{"jsonrpc":"2.0","id":"mcphost-1","result":{},"x":1}` + "\n", `{"jsonrpc":"2.0","id":"mcphost-1","result":{},"x":1}` + "\n", 0},
		{"a reply with both result and error", `{"jsonrpc":"2.0","id":"mcphost-1","result":{},"error":{"code":1,"message":"m"}}` + "\n",
			`{"jsonrpc":"2.0","id":"mcphost-1","result":{},"error":{"code":1,"message":"m"}}` + "\n", 0},
		{"a last line without a newline", reply, reply, 0},
		{"a long reply", strings.Replace(reply, `a\"`, strings.Repeat("x", 200<<10), 1) + "\n", "", 1},
		{"a reply nested deeper than the go-sdk reads", deep + "\n", deep + "\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			passed, diverted := readPipe(t, tc.stream)
			if passed != tc.passed || len(diverted) != tc.diverted {
				t.Errorf("passed %q and took off %d, want %q and %d", passed, len(diverted), tc.passed, tc.diverted)
			}
		})
	}
}

// maxFuzzLine is the longest line FuzzPipeReader reads. Without a bound
// the fuzzer stalls for a minute at a time: a run in this package's test
// binary costs some 0.4ms of coverage bookkeeping (a fuzz function that
// does nothing runs about 2,300 times a second with one worker), and the
// new coverage of a long line is mostly a count of its bytes (a loop's
// 8-bit counter, which wraps past 255), which a one-byte cut loses, so Go's
// minimizer goes on to try every cut, O(n²) runs. For a line of 2KB that
// outlasts -fuzzminimizetime (60s), all the while the only worker fuzzes
// nothing, and then the worker is restarted. At this length each
// minimization takes under a second. Long lines, past the reader's
// buffer, are the unit tests' (TestPipeReaderTakesOffOnlyRawReplies).
const maxFuzzLine = 128

// FuzzPipeReader checks that a line the reader takes off is a response
// the go-sdk decodes the same way, and that every other byte reaches the
// go-sdk unchanged.
func FuzzPipeReader(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":"mcphost-1","result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":"mcphost-1","error":{"code":-1,"message":"m","data":{"a":1}}}`,
		`{"jsonrpc":"2.0","id":"mcphost-1","error":{"Code":-1,"message":"m"}}`,
		`{"jsonrpc":"2.0","id":"mcphost-\u0031","result":{}}`,
		`{"jsonrpc":"2.0","id":"mcphost-1","result":null}`,
		`{"jsonrpc":"1.0","id":"mcphost-1","result":{}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		// The length first: no code that loops over the bytes of a line
		// longer than maxFuzzLine may run, or its count is new coverage.
		if len(line) > maxFuzzLine || strings.ContainsAny(line, "\n") {
			return
		}
		passed, diverted := readPipe(t, line+"\n")
		if len(diverted) == 0 {
			if passed != line+"\n" {
				t.Fatalf("passed %q for %q", passed, line)
			}
			return
		}
		if passed != "" || len(diverted) != 1 {
			t.Fatalf("took off %d and passed %q for %q", len(diverted), passed, line)
		}
		msg, err := jsonrpc.DecodeMessage([]byte(line))
		if err != nil {
			t.Fatalf("took off %q, which the go-sdk does not decode: %v", line, err)
		}
		want, ok := msg.(*jsonrpc.Response)
		got := diverted[0]
		if !ok || want.ID != got.ID {
			t.Fatalf("took off %q as id %v; the go-sdk reads %#v", line, got.ID.Raw(), msg)
		}
		if eq, _ := jsondiff.Equal(want.Result, got.Result); !eq && !(len(want.Result) == 0 && len(got.Result) == 0) {
			t.Fatalf("took off %q with result %s; the go-sdk reads %s", line, got.Result, want.Result)
		}
		if (want.Error == nil) != (got.Error == nil) {
			t.Fatalf("took off %q with error %v; the go-sdk reads %v", line, got.Error, want.Error)
		}
		if want.Error != nil {
			we, ge := want.Error.(*jsonrpc.Error), got.Error.(*jsonrpc.Error)
			if we.Code != ge.Code || we.Message != ge.Message || !bytes.Equal(we.Data, ge.Data) && !reflect.DeepEqual(we.Data, ge.Data) {
				t.Fatalf("took off %q with error %#v; the go-sdk reads %#v", line, ge, we)
			}
		}
	})
}

// A progress notification and the reply after it are taken off in the
// order the server sent them (the notification first), so that a client
// gets the progress before the result.
func TestPipeReaderKeepsWireOrder(t *testing.T) {
	t.Parallel()
	stream := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n" +
		`{"jsonrpc":"2.0","id":"mcphost-1","result":{"content":[]}}` + "\n"
	var order []string
	r := newPipeReader(strings.NewReader(stream))
	r.divertTo(pipeSinks{
		deliver: func(*jsonrpc.Response) bool { order = append(order, "reply"); return true },
		tap: func(method string, _ json.RawMessage) bool {
			if method != "notifications/progress" {
				return false
			}
			order = append(order, "progress")
			return true
		},
	})
	passed, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(order, ",") != "progress,reply" || string(passed) != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`+"\n" {
		t.Errorf("order %v, passed %q", order, passed)
	}
}

// Closing the pipes of a server that stopped reading ends the process even
// while a write is stuck on its full stdin (the write holds the write lock).
func TestPipesCloseDespiteAStuckWrite(t *testing.T) {
	t.Parallel()
	p, err := startPipes(exec.Command("sleep", "60"), 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() { wrote <- p.writeRawCall("mcphost-1", bytes.Repeat([]byte("x"), 1<<20)) }()
	time.Sleep(100 * time.Millisecond) // the write fills the pipe and waits
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		t.Logf("closed: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Close still waits 10s later, behind the stuck write")
	}
	if err := <-wrote; err == nil {
		t.Error("the stuck write succeeded")
	}
}

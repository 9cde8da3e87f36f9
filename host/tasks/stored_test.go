package tasks

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestOutcomeRoundTrip(t *testing.T) {
	for _, out := range []Outcome{
		{Result: json.RawMessage(`{"content":[]}`)},
		{Result: json.RawMessage(`{"content":[],"isError":true}`), Failed: true},
		{Err: &jsonrpc.Error{Code: -32602, Message: "no such tool"}},
		{Err: errors.New("the upstream went away")},
	} {
		got, err := DecodeOutcome(EncodeOutcome(out))
		if err != nil {
			t.Fatalf("%+v: %v", out, err)
		}
		if string(got.Result) != string(out.Result) || got.Failed != out.Failed || (got.Err == nil) != (out.Err == nil) {
			t.Fatalf("%+v came back as %+v", out, got)
		}
		if out.Err != nil && errorOf(got.Err).Message != errorOf(out.Err).Message {
			t.Fatalf("error %v came back as %v", out.Err, got.Err)
		}
	}
}

// FuzzDecodeOutcome: a stored outcome decodes to a result object or an
// error, never both, and never panics.
func FuzzDecodeOutcome(f *testing.F) {
	f.Add([]byte(`{"result":{"content":[]}}`))
	f.Add([]byte(`{"error":{"code":-32603,"message":"x"}}`))
	f.Add([]byte(`{"result":[1],"failed":true}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := DecodeOutcome(b)
		if err != nil {
			return
		}
		if (out.Err == nil) == (len(out.Result) == 0) {
			t.Fatalf("%q decoded to %+v", b, out)
		}
		if out.Err == nil && !json.Valid(out.Result) {
			t.Fatalf("%q decoded to an invalid result %q", b, out.Result)
		}
	})
}

package admin

import (
	"encoding/json"
	"testing"
)

// FuzzUserBodies feeds the bodies of /v1/users (a secret's too) to their decoders: they
// never panic, and what they take is one JSON object of known fields that
// reads back the same.
func FuzzUserBodies(f *testing.F) {
	for _, s := range []string{
		`{"subject":"alice","groups":["eng"],"attributes":{"team":"core"},"keyName":"laptop"}`,
		`{"groups":[],"attributes":{},"disabled":true}`,
		`{"name":"ci","replaces":"0123456789abcdef"}`,
		`{"value":"ghp_0123"}`, `{"value":1}`, `{"value":"a","other":"b"}`,
		``, `null`, `{}`, `[]`, `{"subject":"a"} {}`, `{"groups":null}`, `{"subject":"\u0000"}`, `{"disabled":"yes"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if u, err := decodeUser(body); err == nil {
			roundTrip(t, body, u, decodeUser)
		}
		if p, err := decodeUserPatch(body); err == nil {
			if !json.Valid(body) {
				t.Fatalf("a patch that is not JSON was taken: %q", body)
			}
			roundTrip(t, body, p, decodeUserPatch)
		}
		if k, err := decodeKey(body); err == nil {
			roundTrip(t, body, k, decodeKey)
		}
		if v, err := decodeSecret(body); err == nil {
			roundTrip(t, body, v, decodeSecret)
		}
	})
}

// roundTrip checks that v, taken from body, encodes to a body that
// decodes to the same v.
func roundTrip[T any](t *testing.T, body []byte, v T, decode func([]byte) (T, error)) {
	t.Helper()
	enc, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%q: decoded %#v does not encode: %v", body, v, err)
	}
	again, err := decode(enc)
	if err != nil {
		t.Fatalf("%q: decoded %#v, encoded %s, refused: %v", body, v, enc, err)
	}
	a, _ := json.Marshal(again)
	if string(a) != string(enc) {
		t.Fatalf("%q: %s then %s", body, enc, a)
	}
}

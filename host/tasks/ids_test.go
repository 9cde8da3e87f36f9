package tasks

import (
	"errors"
	"strings"
	"testing"
)

func TestIDsRoundTripAndOwners(t *testing.T) {
	k := NewIDs([]byte("key"))
	for _, r := range []Ref{{ID: "abc"}, {Server: "up", ID: "t-1", Tool: "up__slow"}, {Server: "a.b", ID: "x.y.z"}} {
		id := k.Encode("alice", r)
		got, err := k.Decode("alice", id)
		if err != nil || got != r {
			t.Errorf("Decode(Encode(%+v)) = %+v, %v", r, got, err)
		}
		if _, err := k.Decode("bob", id); !errors.Is(err, ErrUnknownTask) {
			t.Errorf("another owner decoded %q: %v", id, err)
		}
		if _, err := NewIDs([]byte("other")).Decode("alice", id); !errors.Is(err, ErrUnknownTask) {
			t.Errorf("another key decoded %q: %v", id, err)
		}
		// Any change of a character is refused.
		for i := len(idPrefix); i < len(id); i++ {
			c := byte('A')
			if id[i] == 'A' {
				c = 'B'
			}
			bad := id[:i] + string(c) + id[i+1:]
			if got, err := k.Decode("alice", bad); err == nil && got != r {
				t.Errorf("altered id %q decoded to %+v", bad, got)
			}
		}
	}
	if _, err := k.Decode("alice", strings.Repeat("a", maxIDLen+1)); !errors.Is(err, ErrUnknownTask) {
		t.Error("an overlong id was read")
	}
}

func FuzzDecodeID(f *testing.F) {
	k := NewIDs([]byte("key"))
	f.Add(k.Encode("o", Ref{Server: "up", ID: "1"}))
	f.Add("mcpt1...")
	f.Add("mcpt1.AA.AA.AA.AA")
	f.Fuzz(func(t *testing.T, id string) {
		r, err := k.Decode("o", id)
		if err != nil {
			return
		}
		// Whatever decodes was made by Encode for this owner.
		if again := k.Encode("o", r); again != id {
			if r2, err := k.Decode("o", again); err != nil || r2 != r {
				t.Fatalf("%q decoded to %+v, which does not encode back", id, r)
			}
		}
		if _, err := k.Decode("p", id); err == nil {
			t.Fatalf("%q decodes for two owners", id)
		}
	})
}

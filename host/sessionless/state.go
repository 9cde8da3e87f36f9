package sessionless

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcphost-project/mcphost/internal/seal"
)

// A call in rounds (SEP-2322: the server answers input_required with
// questions and a requestState, and the client calls again with its
// answers and that state) runs on the replica that answered its first
// round, and waits there for the retry. The retry may reach any replica:
// the requestState carries, sealed (AES-256-GCM) under a key the replicas
// share, everything a replica needs to go on without the waiting call:
// whose call it is and which, until when, and every answer the client gave
// in earlier rounds, by question. The replica that holds the call hands it
// the answers; any other runs the call again from the start and answers
// each question the upstream asks from the state, so that only the
// questions not answered yet reach the client.
//
// The state may start with the name of the replica that holds the call and
// a dot ("mcphost2.v1:..."), outside the seal, so that a balancer can read
// it (deploy/haproxy.cfg); a retry whose name was changed opens all the
// same, on whichever replica it reaches.

// KeySize is the length of a round-state key.
const KeySize = seal.KeySize

// stateAAD binds a sealed state to its use: a value sealed for something
// else under the same key does not open as one.
const stateAAD = "mcphost/requestState/v1"

// State is what a requestState carries.
type State struct {
	Call    string `json:"c"`           // the waiting call's name on the replica that holds it
	Owner   string `json:"o,omitempty"` // the caller's identity key ("" for none)
	What    string `json:"w"`           // the request: method and name or URI
	Args    string `json:"h,omitempty"` // Digest of the request's arguments
	Expires int64  `json:"e"`           // unix seconds
	// Answers are the client's answers of the earlier rounds.
	Answers []Answer `json:"a,omitempty"`
	// Asked are the questions of the round this state answers: question
	// id -> Digest of the question.
	Asked map[string]string `json:"q,omitempty"`
}

// Answer is one answer of the client's, to the question whose Digest is
// Question.
type Answer struct {
	Question string          `json:"q"`
	Response json.RawMessage `json:"r"`
}

// ErrState is the error of a requestState that does not open: not one of
// this deployment's, changed, or expired.
var ErrState = errors.New("not a requestState of this gateway's, or expired")

// States seals and opens requestStates with one key.
type States struct{ s *seal.Sealer }

// NewStates returns the sealer of round states under key (KeySize bytes).
func NewStates(key []byte) (*States, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("sessionless: a round-state key is %d bytes, not %d", KeySize, len(key))
	}
	s, err := seal.New(key)
	if err != nil {
		return nil, fmt.Errorf("sessionless: %w", err)
	}
	return &States{s: s}, nil
}

// Seal returns st as a requestState, starting with route and a dot when
// route is not "".
func (s *States) Seal(route string, st *State) (string, error) {
	plain, err := json.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("sessionless: encoding a round state: %w", err)
	}
	sealed, err := s.s.Seal(plain, stateAAD)
	if err != nil {
		return "", fmt.Errorf("sessionless: sealing a round state: %w", err)
	}
	if route != "" {
		return route + "." + sealed, nil
	}
	return sealed, nil
}

// Open returns the State that state carries, if it opens under this key
// and has not expired at now; ErrState otherwise.
func (s *States) Open(state string, now time.Time) (*State, error) {
	if i := strings.IndexByte(state, '.'); i >= 0 {
		state = state[i+1:] // the route: outside the seal
	}
	plain, err := s.s.Open(state, stateAAD)
	if err != nil {
		return nil, ErrState
	}
	var st State
	if err := json.Unmarshal(plain, &st); err != nil || st.Call == "" || now.Unix() > st.Expires {
		return nil, ErrState
	}
	return &st, nil
}

// Digest names a question (or a request's arguments) by the SHA-256 of its
// kind and its JSON encoding, so that a question asked again, in a call run
// again, is known by its content.
func Digest(kind string, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(err.Error())
	}
	h := sha256.New()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write(b)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

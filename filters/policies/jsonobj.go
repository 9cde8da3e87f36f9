package policies

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// object is a JSON object that keeps its members' order and their values'
// bytes, so that a policy that edits one member of a schema or of
// arguments leaves the rest exactly as the upstream wrote it.
type object []member

type member struct {
	Key   string
	Value json.RawMessage
}

var errNotObject = errors.New("not a JSON object")

// parseObject decodes a JSON object. Empty input or null is an empty object.
func parseObject(raw []byte) (object, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return object{}, nil
	}
	if raw[0] != '{' {
		return nil, errNotObject
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	o := object{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("object key is %T", tok)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o = append(o, member{Key: key, Value: v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the object")
	}
	return o, nil
}

// get returns the value of key (the last, if the key is repeated).
func (o object) get(key string) (json.RawMessage, bool) {
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].Key == key {
			return o[i].Value, true
		}
	}
	return nil, false
}

// set replaces the value of key where it stands, or appends it.
func (o *object) set(key string, v json.RawMessage) {
	found := false
	out := (*o)[:0]
	for _, m := range *o {
		if m.Key == key {
			if found {
				continue
			}
			found = true
			m.Value = v
		}
		out = append(out, m)
	}
	if !found {
		out = append(out, member{Key: key, Value: v})
	}
	*o = out
}

// del removes key and reports whether it was there.
func (o *object) del(key string) bool {
	found := false
	out := (*o)[:0]
	for _, m := range *o {
		if m.Key == key {
			found = true
			continue
		}
		out = append(out, m)
	}
	*o = out
	return found
}

// MarshalJSON writes the members in order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.Key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v := m.Value
		if len(v) == 0 {
			v = json.RawMessage("null")
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// raw encodes o; it cannot fail for an object built from valid JSON.
func (o object) raw() json.RawMessage {
	b, _ := o.MarshalJSON()
	return b
}

// mustJSON encodes v, for values that always encode.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// mapStrings rewrites every string value inside a JSON value (not object
// keys) with f, keeping everything else, and reports whether anything
// changed. Unchanged parts keep their bytes.
func mapStrings(raw json.RawMessage, f func(string) (string, bool)) (json.RawMessage, bool, error) {
	return (&stringWalk{f: f}).walk(raw)
}

// mapStringsAndKeys is mapStrings that rewrites object keys too. A key
// rewritten to one its object already has gets a suffix (" #2"), so no
// member is lost.
func mapStringsAndKeys(raw json.RawMessage, f func(string) (string, bool)) (json.RawMessage, bool, error) {
	return (&stringWalk{f: f, keys: true}).walk(raw)
}

// messageWalk returns the walk of mapStrings over an MCP message: it
// leaves alone base64 payloads (the value of every "blob" member, and of
// "data" in an object whose "type" is "image" or "audio") and the value of
// every member named in keep. may is as in stringWalk.
func messageWalk(f func(string) (string, bool), may func([]byte) bool, keep ...string) *stringWalk {
	return &stringWalk{f: f, may: may, skip: func(o object, i int) bool {
		for _, k := range keep {
			if o[i].Key == k {
				return true
			}
		}
		return isBinaryMember(o, i)
	}}
}

// isBinaryMember reports whether the i-th member of o holds base64 data.
func isBinaryMember(o object, i int) bool {
	switch o[i].Key {
	case "blob":
		return true
	case "data":
		var typ string
		v, _ := o.get("type")
		return json.Unmarshal(v, &typ) == nil && (typ == "image" || typ == "audio")
	}
	return false
}

// A stringWalk rewrites the strings of a JSON value with f; keys says
// whether object keys are rewritten too.
type stringWalk struct {
	f    func(string) (string, bool)
	keys bool
	// skip, if set, says which members of an object to leave as they are,
	// key and value.
	skip func(o object, i int) bool
	// may, if set, reports whether f could change a string inside a
	// JSON value; a value for which it is false is left as it is, unread.
	may func(raw []byte) bool
}

// walk rewrites raw, keeping the bytes of what it does not change, and
// reports whether it changed anything.
func (w *stringWalk) walk(raw json.RawMessage) (json.RawMessage, bool, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || (w.may != nil && !w.may(t)) {
		return raw, false, nil
	}
	switch t[0] {
	case '"':
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return nil, false, err
		}
		out, changed := w.f(s)
		if !changed {
			return raw, false, nil
		}
		return mustJSON(out), true, nil
	case '{':
		o, err := parseObject(t)
		if err != nil {
			return nil, false, err
		}
		changed, err := w.members(o)
		if err != nil || !changed {
			return raw, false, err
		}
		return o.raw(), true, nil
	case '[':
		var list []json.RawMessage
		if err := json.Unmarshal(t, &list); err != nil {
			return nil, false, err
		}
		any := false
		for i := range list {
			v, changed, err := w.walk(list[i])
			if err != nil {
				return nil, false, err
			}
			if changed {
				list[i], any = v, true
			}
		}
		if !any {
			return raw, false, nil
		}
		return rawArray(list), true, nil
	}
	return raw, false, nil
}

// rawArray encodes a list of JSON values as they are: json.Marshal would
// check and compact each again.
func rawArray(list []json.RawMessage) json.RawMessage {
	n := 2
	for _, v := range list {
		n += len(v) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, v := range list {
		if i > 0 {
			b = append(b, ',')
		}
		if len(v) == 0 {
			v = json.RawMessage("null")
		}
		b = append(b, v...)
	}
	return append(b, ']')
}

// members rewrites the members of o in place and reports whether it
// changed any.
func (w *stringWalk) members(o object) (bool, error) {
	any := false
	for i := range o {
		if w.skip != nil && w.skip(o, i) {
			continue
		}
		v, changed, err := w.walk(o[i].Value)
		if err != nil {
			return false, err
		}
		if changed {
			o[i].Value, any = v, true
		}
		if !w.keys {
			continue
		}
		if k, changed := w.f(o[i].Key); changed {
			o[i].Key, any = uniqueKey(o, i, k), true
		}
	}
	return any, nil
}

// uniqueKey returns k, or k with a suffix, so that no member of o other
// than the i-th has it.
func uniqueKey(o object, i int, k string) string {
	taken := func(k string) bool {
		for j := range o {
			if j != i && o[j].Key == k {
				return true
			}
		}
		return false
	}
	if !taken(k) {
		return k
	}
	for n := 2; ; n++ {
		if c := fmt.Sprintf("%s #%d", k, n); !taken(c) {
			return c
		}
	}
}

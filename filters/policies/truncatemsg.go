package policies

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mcphost-project/mcphost/abi"
)

// truncateMethods are the methods whose messages truncate cuts, with what
// its note calls each message.
var truncateMethods = []struct{ method, what string }{
	{abi.MethodPromptsGet, "prompt"},
	{abi.MethodResourcesRead, "resource"},
	{abi.MethodLoggingMessage, "log message"},
	{abi.MethodProgress, "progress message"},
	{abi.MethodCreateMessage, "sampling request"},
	{abi.MethodElicit, "elicitation message"},
}

// truncateMethodList returns the methods of truncateMethods, for the hints.
func truncateMethodList() []string {
	ms := make([]string, len(truncateMethods))
	for i, m := range truncateMethods {
		ms[i] = m.method
	}
	return ms
}

// message applies the limits of tool results to a message: binary data
// over max_binary_bytes is replaced with a note (or dropped), and text over
// max_chars, counted over the whole message in order, is cut, the piece
// that crosses the limit ending with a note. What holds text and binary
// data depends on the method:
//
//	prompts/get             messages[].content: a text, image, audio or
//	sampling/createMessage  resource block, or a list of blocks (tool_result
//	                        blocks hold more); a message left without content
//	                        is removed
//	resources/read          contents[]: text or blob
//	notifications/message   data, when it is a string
//	notifications/progress  message
//	elicitation/create      message
//
// Blocks and entries wholly past the text limit are removed.
func (t *truncate) message(in *abi.MessageInput) (*abi.MessageOutput, error) {
	what := ""
	for _, m := range truncateMethods {
		if m.method == in.Method {
			what = m.what
		}
	}
	if what == "" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(in.Message))
	dec.UseNumber()
	var msg map[string]any
	if err := dec.Decode(&msg); err != nil || msg == nil {
		return nil, nil // not an object: nothing this policy knows how to cut
	}
	c := &cutter{t: t}
	switch in.Method {
	case abi.MethodPromptsGet, abi.MethodCreateMessage:
		c.messages(msg)
	case abi.MethodResourcesRead:
		c.contents(msg)
	case abi.MethodLoggingMessage:
		c.text(msg, "data", nil)
	default:
		c.text(msg, "message", nil)
	}
	if !c.cut(what) {
		return nil, nil
	}
	c.record(msg)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(msg); err != nil {
		return nil, fmt.Errorf("%s: %v", in.Method, err)
	}
	return &abi.MessageOutput{Message: bytes.TrimSuffix(b.Bytes(), []byte("\n"))}, nil
}

// A cutter gathers the pieces of one message that hold text or binary
// data, in order, then cuts them. The message is decoded into maps and
// slices, which it edits in place.
type cutter struct {
	t      *truncate
	texts  []piece
	blobs  []piece
	lists  []*list
	total  int // characters of text, when cut
	cutOff bool
	// removed counts binary data removed or replaced.
	removed int
}

// A piece is one string member of an object of the message: text, or
// base64 data.
type piece struct {
	holder map[string]any
	key    string
	// remove takes out the block or entry that holds the piece; nil for a
	// member of the message itself, which can only be cut.
	remove func()
	// For binary data: what it is (image, audio, resource blob), its MIME
	// type, and replace, which puts a note in its place.
	kind, mime string
	replace    func(note string)
}

// gone marks an element of a list that the cut removed.
type gone struct{}

// A list is an array of the message from which the cut may remove
// elements; emptied, if set, runs when it removes all of them.
type list struct {
	parent  map[string]any
	key     string
	items   []any
	emptied func()
}

// open returns parent[key] as a list, or nil if it is not an array.
func (c *cutter) open(parent map[string]any, key string, emptied func()) *list {
	items, ok := parent[key].([]any)
	if !ok {
		return nil
	}
	l := &list{parent: parent, key: key, items: items, emptied: emptied}
	c.lists = append(c.lists, l)
	return l
}

func (l *list) remover(i int) func() { return func() { l.items[i] = gone{} } }

// close writes l back without the elements the cut removed.
func (l *list) close() {
	kept := make([]any, 0, len(l.items))
	for _, v := range l.items {
		if _, g := v.(gone); !g {
			kept = append(kept, v)
		}
	}
	if len(kept) == len(l.items) {
		return
	}
	l.parent[l.key] = kept
	if len(kept) == 0 && l.emptied != nil {
		l.emptied()
	}
}

// text adds holder[key] as a text piece if it is a string.
func (c *cutter) text(holder map[string]any, key string, remove func()) {
	if _, ok := holder[key].(string); ok {
		c.texts = append(c.texts, piece{holder: holder, key: key, remove: remove})
	}
}

// binary adds holder[key] as binary data if it is a string.
func (c *cutter) binary(holder map[string]any, key, kind string, replace func(string), remove func()) {
	if _, ok := holder[key].(string); ok {
		mime, _ := holder["mimeType"].(string)
		c.blobs = append(c.blobs, piece{holder: holder, key: key, remove: remove, kind: kind, mime: mime, replace: replace})
	}
}

// messages gathers the content of prompt or sampling messages.
func (c *cutter) messages(msg map[string]any) {
	ms := c.open(msg, "messages", nil)
	if ms == nil {
		return
	}
	for i, v := range ms.items {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		switch content := m["content"].(type) {
		case map[string]any:
			c.block(content, func(v any) { m["content"] = v }, ms.remover(i))
		case []any:
			c.blocks(c.open(m, "content", ms.remover(i)))
		}
	}
}

// blocks gathers a list of content blocks.
func (c *cutter) blocks(l *list) {
	for i, v := range l.items {
		if b, ok := v.(map[string]any); ok {
			c.block(b, func(v any) { l.items[i] = v }, l.remover(i))
		}
	}
}

// block gathers one content block; set replaces it, remove takes it out.
func (c *cutter) block(b map[string]any, set func(any), remove func()) {
	replace := func(note string) { set(map[string]any{"type": "text", "text": note}) }
	switch typ, _ := b["type"].(string); typ {
	case "text":
		c.text(b, "text", remove)
	case "image", "audio":
		c.binary(b, "data", typ, replace, remove)
	case "resource":
		res, ok := b["resource"].(map[string]any)
		if !ok {
			return
		}
		if _, blob := res["blob"].(string); blob {
			c.binary(res, "blob", "resource blob", replace, remove)
		} else {
			c.text(res, "text", remove)
		}
	case "tool_result":
		if l := c.open(b, "content", nil); l != nil {
			c.blocks(l)
		}
	}
}

// contents gathers the contents of a resource: each text, or blob, which
// a note replaces as the entry's text.
func (c *cutter) contents(msg map[string]any) {
	l := c.open(msg, "contents", nil)
	if l == nil {
		return
	}
	for i, v := range l.items {
		e, ok := v.(map[string]any)
		if !ok {
			continue
		}
		if _, blob := e["blob"].(string); blob {
			c.binary(e, "blob", "resource blob", func(note string) {
				delete(e, "blob")
				e["mimeType"] = "text/plain"
				e["text"] = note
			}, l.remover(i))
		} else {
			c.text(e, "text", l.remover(i))
		}
	}
}

// cut applies the limits to the pieces gathered and reports whether it
// changed anything. what names the message in the note.
func (c *cutter) cut(what string) bool {
	changed := false
	// Binary data first, so that its notes are neither counted nor cut.
	for _, p := range c.blobs {
		size := base64Size(p.holder[p.key].(string))
		if size <= c.t.maxBinary {
			continue
		}
		c.removed++
		changed = true
		if c.t.drop {
			p.remove()
			continue
		}
		p.replace(c.t.binaryNote(p.kind, p.mime, size))
	}
	for _, p := range c.texts {
		c.total += runeCount(p.holder[p.key].(string))
	}
	if c.total > c.t.maxChars {
		changed, c.cutOff = true, true
		note := c.t.cutNote(what, c.total) + "]"
		left, noted := c.t.maxChars, false
		for _, p := range c.texts {
			s := p.holder[p.key].(string)
			n := runeCount(s)
			switch {
			case n <= left:
				left -= n
			case !noted:
				s, _ = truncateRunes(s, left, "")
				if s != "" {
					s += "\n"
				}
				p.holder[p.key] = s + note
				left, noted = 0, true
			case p.remove != nil:
				p.remove()
			default:
				p.holder[p.key] = ""
			}
		}
	}
	// Innermost lists last opened: close them first, so that a message
	// left without content is removed from its list before that closes.
	for i := len(c.lists) - 1; i >= 0; i-- {
		c.lists[i].close()
	}
	return changed
}

// record notes in the message's _meta what the cut did, as for results,
// when _meta is an object or absent.
func (c *cutter) record(msg map[string]any) {
	meta, ok := msg["_meta"].(map[string]any)
	if !ok && msg["_meta"] != nil {
		return
	}
	if meta == nil {
		meta = map[string]any{}
	}
	if c.removed > 0 {
		meta["mcphost/binaryRemoved"] = c.removed
	}
	if c.cutOff {
		meta["mcphost/truncated"] = map[string]int{"chars": c.total, "kept": c.t.maxChars}
	}
	msg["_meta"] = meta
}

// base64Size returns the decoded size of base64 text, from its length.
func base64Size(s string) int {
	n := len(s) / 4 * 3
	switch {
	case len(s) >= 2 && s[len(s)-2:] == "==":
		n -= 2
	case len(s) >= 1 && s[len(s)-1] == '=':
		n--
	}
	return max(n, 0)
}

package policies

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
)

// Defaults of builtin:truncate.
const (
	DefaultMaxChars       = 20000
	DefaultMaxBinaryBytes = 1 << 20
)

// defaultPagingParams are argument names that suggest a tool can return
// the rest of a result in further calls.
var defaultPagingParams = []string{"offset", "cursor", "page", "page_token", "pageToken", "next_cursor", "nextCursor", "start", "skip", "start_line", "startLine"}

// truncate is builtin:truncate: it caps the text of a result, and of the
// messages of truncateMethods (truncatemsg.go), and removes oversized
// binary content. Configuration:
//
//	max_chars        = 20000      # text budget for the whole result, in characters
//	max_binary_bytes = 1048576    # image/audio data or resource blob above this is removed
//	binary           = "replace"  # or "drop": replace says what was removed, in a text block
//	paging_params    = ["offset", "cursor", "page", ...] # argument names that mean "can page"
type truncate struct {
	maxChars  int
	maxBinary int
	drop      bool
	paging    []string
}

func newTruncate() pdk.Policy {
	t := &truncate{}
	return pdk.Policy{
		Name:       "truncate",
		Version:    Version,
		Configure:  t.configure,
		ToolResult: t.toolResult,
		Message:    t.message,
		// A result or message encoded in fewer bytes than both limits
		// has fewer characters of text and fewer bytes of binary data
		// than either: nothing to cut.
		Hints: func() abi.Hints {
			minBytes := min(t.maxChars, t.maxBinary) + 1
			return abi.Hints{
				ResultMinBytes:  minBytes,
				Methods:         map[string][]string{abi.HookMessage: truncateMethodList()},
				MessageMinBytes: minBytes,
			}
		},
	}
}

func (t *truncate) configure(cfg pdk.ConfigSource) error {
	var err error
	if t.maxChars, err = positiveInt(cfg, "max_chars", DefaultMaxChars); err != nil {
		return err
	}
	if t.maxBinary, err = positiveInt(cfg, "max_binary_bytes", DefaultMaxBinaryBytes); err != nil {
		return err
	}
	mode, err := enum(cfg, "binary", "replace", "drop")
	if err != nil {
		return err
	}
	t.drop = mode == "drop"
	list, ok, err := stringList(cfg, "paging_params")
	if err != nil {
		return err
	}
	t.paging = defaultPagingParams
	if ok {
		t.paging = list
	}
	return nil
}

func (t *truncate) toolResult(in *abi.ToolResultInput) (*abi.ToolResultOutput, error) {
	r := in.Result
	if r == nil {
		return nil, nil
	}
	changed := false
	meta, err := parseObject(r.Meta)
	if err != nil {
		meta = nil // not an object: leave _meta alone
	}

	// Binary content first, so that a replacement note is not cut.
	removed := 0
	content := make([]abi.Content, 0, len(r.Content))
	for _, c := range r.Content {
		size, kind, mime := binarySize(&c)
		if size <= t.maxBinary {
			content = append(content, c)
			continue
		}
		removed++
		changed = true
		if !t.drop {
			content = append(content, abi.Content{Type: "text", Text: t.binaryNote(kind, mime, size)})
		}
	}
	if removed > 0 {
		r.Content = content
		if meta != nil {
			meta.set("mcphost/binaryRemoved", mustJSON(removed))
		}
	}

	total := 0
	for i := range r.Content {
		total += runeCount(textOf(&r.Content[i]))
	}
	if total > t.maxChars {
		changed = true
		left := t.maxChars
		kept := r.Content[:0]
		for _, c := range r.Content {
			text := textOf(&c)
			n := runeCount(text)
			switch {
			case n == 0 && c.Type != "text":
			case n <= left:
				left -= n
			case left == 0:
				continue // nothing of it fits
			default:
				cut, _ := truncateRunes(text, left, "")
				setText(&c, cut)
				left = 0
			}
			kept = append(kept, c)
		}
		r.Content = append(kept, abi.Content{Type: "text", Text: t.note(in, total)})
		if meta != nil {
			meta.set("mcphost/truncated", mustJSON(map[string]int{"chars": total, "kept": t.maxChars}))
		}
	}
	if !changed {
		return nil, nil
	}
	if meta != nil && len(meta) > 0 {
		r.Meta = meta.raw()
	}
	return &abi.ToolResultOutput{Result: r}, nil
}

// note tells the model what was cut and, honestly, how it might get the rest.
func (t *truncate) note(in *abi.ToolResultInput, total int) string {
	msg := t.cutNote("result", total)
	var paging []string
	if args, err := parseObject(in.Arguments); err == nil {
		for _, p := range t.paging {
			if _, ok := args.get(p); ok {
				paging = append(paging, p)
			}
		}
	}
	if len(paging) > 0 {
		msg += fmt.Sprintf(" This call used %s: call %s again with the next %s to read on.]", quoteList(paging), in.Name, paging[0])
	} else {
		msg += fmt.Sprintf(" If %s can return less (a narrower query, a range, a page), ask for the part you need.]", in.Name)
	}
	return msg
}

// cutNote is the start of the note on a cut: what was cut, from how much
// to how much. The caller closes it with "]", after advice if it has any.
func (t *truncate) cutNote(what string, total int) string {
	return fmt.Sprintf("[mcphost: %s cut to %d of %d characters; %d characters not shown.", what, t.maxChars, total, total-t.maxChars)
}

// binaryNote stands in for binary data over the limit.
func (t *truncate) binaryNote(kind, mime string, size int) string {
	if mime == "" {
		mime = "unknown type"
	}
	return fmt.Sprintf("[%s (%s, %d bytes) removed: larger than this gateway's limit of %d bytes]", kind, mime, size, t.maxBinary)
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// textOf returns the text a content block puts before the model: a text
// block's text or an embedded resource's text.
func textOf(c *abi.Content) string {
	switch c.Type {
	case "text":
		return c.Text
	case "resource":
		var res struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(c.Resource, &res)
		return res.Text
	}
	return ""
}

func setText(c *abi.Content, text string) {
	switch c.Type {
	case "text":
		c.Text = text
	case "resource":
		o, err := parseObject(c.Resource)
		if err == nil {
			o.set("text", mustJSON(text))
			c.Resource = o.raw()
		}
	}
}

// binarySize returns the decoded size of a block's binary payload, what
// kind of payload it is and its MIME type, or 0.
func binarySize(c *abi.Content) (int, string, string) {
	switch c.Type {
	case "image", "audio":
		return len(c.Data), c.Type, c.MimeType
	case "resource":
		var res struct {
			Blob     string `json:"blob"`
			MimeType string `json:"mimeType"`
		}
		if json.Unmarshal(c.Resource, &res) != nil || res.Blob == "" {
			return 0, "", ""
		}
		return base64Size(res.Blob), "resource blob", res.MimeType
	}
	return 0, "", ""
}

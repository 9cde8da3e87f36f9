package policies

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mcphost-project/mcphost/abi"
)

// PinFileVersion is the version of the pin file format.
const PinFileVersion = 1

// PinFile is the file where builtin:pin keeps the definitions it trusts.
// It is plain JSON so that operators, and `mcphost pins`, can read and edit
// it:
//
//	{
//	  "version": 1,
//	  "tools": {
//	    "clock/current_time": {
//	      "server": "clock", "tool": "current_time",
//	      "sha256": "…", "definition": { … }, "pinnedAt": "2025-01-02T03:04:05Z",
//	      "pending": { "sha256": "…", "definition": { … }, "seenAt": "…" }
//	    }
//	  }
//	}
//
// A tool is keyed by server and upstream tool name, so renaming it in the
// gateway does not unpin it. An entry with "pending" is a tool whose
// definition changed: it stays hidden until approved.
type PinFile struct {
	Version int                  `json:"version"`
	Tools   map[string]*PinEntry `json:"tools"`
}

// PinEntry is one pinned tool.
type PinEntry struct {
	Server     string          `json:"server"`
	Tool       string          `json:"tool"`
	SHA256     string          `json:"sha256"`
	Definition json.RawMessage `json:"definition"`
	PinnedAt   string          `json:"pinnedAt,omitempty"`
	Pending    *PinChange      `json:"pending,omitempty"`
}

// PinChange is a definition seen that differs from the pinned one.
type PinChange struct {
	SHA256     string          `json:"sha256"`
	Definition json.RawMessage `json:"definition"`
	SeenAt     string          `json:"seenAt,omitempty"`
}

// PinKey is the key of a tool in PinFile.Tools.
func PinKey(server, tool string) string { return server + "/" + tool }

// pinDefinition is what is pinned of a tool: everything a model reads or
// relies on, by its upstream name. Not the exposed name, not _meta.
type pinDefinition struct {
	Tool         string           `json:"tool"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description,omitempty"`
	InputSchema  json.RawMessage  `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *abi.Annotations `json:"annotations,omitempty"`
}

// PinDefinition returns the canonical JSON of what builtin:pin pins of t
// (object keys sorted, no spaces) and its SHA-256 in hex.
func PinDefinition(t *abi.Tool) (json.RawMessage, string, error) {
	raw, err := json.Marshal(pinDefinition{Tool: t.Tool, Title: t.Title, Description: t.Description,
		InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations})
	if err != nil {
		return nil, "", err
	}
	canon, err := canonicalJSON(raw)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(canon)
	return canon, hex.EncodeToString(sum[:]), nil
}

// canonicalJSON re-encodes a JSON value with sorted keys and numbers as written.
func canonicalJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// ReadPinFile reads a pin file; a missing file is an empty one.
func ReadPinFile(path string) (*PinFile, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &PinFile{Version: PinFileVersion, Tools: map[string]*PinEntry{}}, nil
	}
	if err != nil {
		return nil, err
	}
	return ParsePinFile(data)
}

// ParsePinFile decodes the contents of a pin file.
func ParsePinFile(data []byte) (*PinFile, error) {
	var f PinFile
	if len(bytes.TrimSpace(data)) == 0 {
		return &PinFile{Version: PinFileVersion, Tools: map[string]*PinEntry{}}, nil
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("pin file: %w", err)
	}
	if f.Version != PinFileVersion {
		return nil, fmt.Errorf("pin file: version %d, want %d", f.Version, PinFileVersion)
	}
	if f.Tools == nil {
		f.Tools = map[string]*PinEntry{}
	}
	for k, e := range f.Tools {
		if e == nil {
			return nil, fmt.Errorf("pin file: %q: null entry", k)
		}
		if e.SHA256 == "" {
			return nil, fmt.Errorf("pin file: %q: no sha256", k)
		}
		if e.Pending != nil && e.Pending.SHA256 == "" {
			return nil, fmt.Errorf("pin file: %q: pending change without sha256", k)
		}
	}
	return &f, nil
}

// WritePinFile writes f to path atomically: a reader sees the old file or
// the new one, never a part.
func WritePinFile(path string, f *PinFile) error {
	if f.Version == 0 {
		f.Version = PinFileVersion
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".pins-*.tmp")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// Keys returns the file's tool keys, sorted.
func (f *PinFile) Keys() []string {
	keys := make([]string, 0, len(f.Tools))
	for k := range f.Tools {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Approve makes the pending definition of key the pinned one.
func (f *PinFile) Approve(key, now string) error {
	e := f.Tools[key]
	switch {
	case e == nil:
		return fmt.Errorf("no pinned tool %q", key)
	case e.Pending == nil:
		return fmt.Errorf("%q has no pending change", key)
	}
	e.SHA256, e.Definition, e.PinnedAt, e.Pending = e.Pending.SHA256, e.Pending.Definition, now, nil
	return nil
}

// PinDiff returns a line diff of two definitions as indented JSON: lines
// only in old start with "-", only in new with "+", and two lines of
// context around each change start with " ".
func PinDiff(old, new json.RawMessage) string {
	a, b := indentLines(old), indentLines(new)
	const maxLines = 4000
	if len(a) > maxLines || len(b) > maxLines {
		return fmt.Sprintf("(definitions of %d and %d lines differ; too long to diff)\n", len(a), len(b))
	}
	// Longest common subsequence, then walk it.
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var lines []line
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			lines = append(lines, line{' ', a[i]})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			lines = append(lines, line{'-', a[i]})
			i++
		default:
			lines = append(lines, line{'+', b[j]})
			j++
		}
	}
	const context = 2
	var out strings.Builder
	last := -1
	for k, l := range lines {
		if l.op == ' ' {
			near := false
			for d := -context; d <= context; d++ {
				if k+d >= 0 && k+d < len(lines) && lines[k+d].op != ' ' {
					near = true
					break
				}
			}
			if !near {
				continue
			}
		}
		if last >= 0 && k > last+1 {
			out.WriteString("  ...\n")
		}
		out.WriteByte(l.op)
		out.WriteByte(' ')
		out.WriteString(l.text)
		out.WriteByte('\n')
		last = k
	}
	return out.String()
}

func indentLines(raw json.RawMessage) []string {
	var b bytes.Buffer
	if len(raw) == 0 || json.Indent(&b, raw, "", "  ") != nil {
		return strings.Split(string(raw), "\n")
	}
	return strings.Split(b.String(), "\n")
}

// Package tokens measures tool catalogs as models pay for them: the bytes
// of each tool's MCP definition (what tools/list sends) and its tokens
// under cl100k_base, the BPE of OpenAI's GPT-4 models (counted by
// github.com/pkoukk/tiktoken-go), whose vocabulary is embedded in the
// binary in a compact form (vocab.go, 456 KB): nothing is fetched. Other
// models' tokenizers differ; the figures compare catalogs, and policies'
// savings, with one measure. A catalog is measured before policies (as the
// upstreams serve it) and after (as one caller sees it), per server and
// per toolset.
package tokens

import (
	"encoding/json"
	"fmt"
	"sync"

	tiktoken "github.com/pkoukk/tiktoken-go"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/toolset"
)

// Encoding is the tokenizer tokens count with.
const Encoding = "cl100k_base"

var (
	encOnce sync.Once
	enc     *tiktoken.Tiktoken
	encErr  error
)

// encoder loads the vocabulary on first use (about 100 ms and 20 MB),
// from the embedded copy alone.
func encoder() (*tiktoken.Tiktoken, error) {
	encOnce.Do(func() {
		tiktoken.SetBpeLoader(embeddedLoader{})
		enc, encErr = tiktoken.GetEncoding(Encoding)
		if encErr != nil {
			encErr = fmt.Errorf("tokens: loading %s: %w", Encoding, encErr)
		}
	})
	return enc, encErr
}

// Count returns the tokens of s, special tokens' text counted as text.
func Count(s string) (int, error) {
	e, err := encoder()
	if err != nil {
		return 0, err
	}
	return len(e.EncodeOrdinary(s)), nil
}

// Size is what a list of tools costs: how many, the bytes of their MCP
// definitions as JSON, and the tokens of those.
type Size struct {
	Tools  int `json:"tools"`
	Bytes  int `json:"bytes"`
	Tokens int `json:"tokens"`
}

func (s *Size) add(o Size) {
	s.Tools, s.Bytes, s.Tokens = s.Tools+o.Tools, s.Bytes+o.Bytes, s.Tokens+o.Tokens
}

// Measure returns the size of tools, each as a tools/list result holds it.
func Measure(tools []abi.Tool) (Size, error) {
	var s Size
	for i := range tools {
		ts, err := measureOne(&tools[i])
		if err != nil {
			return Size{}, err
		}
		s.add(ts)
	}
	return s, nil
}

func measureOne(t *abi.Tool) (Size, error) {
	b, err := json.Marshal(wire.MCPTool(t))
	if err != nil {
		return Size{}, fmt.Errorf("tokens: encoding tool %q: %w", t.Name, err)
	}
	n, err := Count(string(b))
	if err != nil {
		return Size{}, err
	}
	return Size{Tools: 1, Bytes: len(b), Tokens: n}, nil
}

// Row is the size of one server's or toolset's tools before policies and
// after them, for one caller.
type Row struct {
	Name   string `json:"name"`
	Before Size   `json:"before"`
	After  Size   `json:"after"`
}

// Report is a catalog measured: per server (in catalog order), per
// toolset, and in all.
type Report struct {
	Encoding string `json:"encoding"`
	Servers  []Row  `json:"servers"`
	Toolsets []Row  `json:"toolsets,omitempty"`
	Total    Row    `json:"total"`
}

// Catalog measures before (the catalog as the upstreams serve it) and
// after (as one caller sees it, after policies), per server, and per
// toolset of toolsets (what its endpoint would serve that caller).
func Catalog(before, after []abi.Tool, toolsets []toolset.Toolset) (*Report, error) {
	r := &Report{Encoding: Encoding, Total: Row{Name: "total"}}
	rows := map[string]int{} // server -> index into r.Servers
	sizes := func(tools []abi.Tool, pick func(r *Row) *Size) error {
		for i := range tools {
			t := &tools[i]
			s, err := measureOne(t)
			if err != nil {
				return err
			}
			i, ok := rows[t.Server]
			if !ok {
				i = len(r.Servers)
				r.Servers = append(r.Servers, Row{Name: t.Server})
				rows[t.Server] = i
			}
			pick(&r.Servers[i]).add(s)
			pick(&r.Total).add(s)
			for j := range toolsets {
				if toolsets[j].Includes(t.Server, t.Tool) {
					pick(&r.Toolsets[j]).add(s)
				}
			}
		}
		return nil
	}
	for _, ts := range toolsets {
		r.Toolsets = append(r.Toolsets, Row{Name: ts.Name})
	}
	if err := sizes(before, func(r *Row) *Size { return &r.Before }); err != nil {
		return nil, err
	}
	if err := sizes(after, func(r *Row) *Size { return &r.After }); err != nil {
		return nil, err
	}
	return r, nil
}

package tokens

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/toolset"
)

// TestCount checks the embedded vocabulary against counts tiktoken gives
// for cl100k_base.
func TestCount(t *testing.T) {
	for s, want := range map[string]int{
		"":                     0,
		"hello world":          2,
		"tiktoken is great!":   6,
		`{"type":"object"}`:    5,
		"<|endoftext|>":        7, // special tokens' text is text
		strings.Repeat("a", 8): 1,
	} {
		got, err := Count(s)
		if err != nil || got != want {
			t.Errorf("Count(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
}

func tool(server, name, desc string) abi.Tool {
	return abi.Tool{Name: server + "__" + name, Server: server, Tool: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func TestCatalog(t *testing.T) {
	before := []abi.Tool{
		tool("fs", "read_file", "Reads a file from the disk and returns all of its contents as text."),
		tool("fs", "write_file", "Writes a file."),
		tool("clock", "now", "Tells the time."),
	}
	after := []abi.Tool{tool("fs", "read_file", "Reads a file."), tool("clock", "now", "Tells the time.")}
	r, err := Catalog(before, after, []toolset.Toolset{{Name: "files", Servers: []string{"fs"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Servers) != 2 || r.Servers[0].Name != "fs" || r.Servers[1].Name != "clock" {
		t.Fatalf("servers %+v", r.Servers)
	}
	fs := r.Servers[0]
	if fs.Before.Tools != 2 || fs.After.Tools != 1 || fs.After.Bytes >= fs.Before.Bytes || fs.After.Tokens >= fs.Before.Tokens || fs.After.Tokens == 0 {
		t.Errorf("fs row %+v", fs)
	}
	if r.Servers[1].Before != r.Servers[1].After {
		t.Errorf("clock row %+v: policies left it as it was", r.Servers[1])
	}
	if r.Total.Before.Tools != 3 || r.Total.After.Tokens != fs.After.Tokens+r.Servers[1].After.Tokens {
		t.Errorf("total %+v", r.Total)
	}
	if len(r.Toolsets) != 1 || r.Toolsets[0].Before != fs.Before || r.Toolsets[0].After != fs.After {
		t.Errorf("toolsets %+v, want the fs row's sizes", r.Toolsets)
	}
	b, _ := json.Marshal(after[0])
	var one Size
	if one, err = Measure(after[:1]); err != nil || one.Bytes == 0 || one.Bytes > len(b) {
		t.Errorf("Measure = %+v, %v", one, err)
	}
}

// TestVocabulary checks the embedded vocabulary against the copy in the
// module go.mod pins, which internal/genvocab reads: a vocabulary that no
// longer matches fails here (run go generate ./host/tokens).
func TestVocabulary(t *testing.T) {
	want, err := tiktoken_loader.NewOfflineLoader().LoadTiktokenBpe("cl100k_base.tiktoken")
	if err != nil {
		t.Fatal(err)
	}
	got, err := embeddedLoader{}.LoadTiktokenBpe("https://example.invalid/encodings/cl100k_base.tiktoken")
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("the embedded vocabulary has %d tokens, the module's %d, and they differ: run go generate ./host/tokens", len(got), len(want))
	}
	if _, err := (embeddedLoader{}).LoadTiktokenBpe("o200k_base.tiktoken"); err == nil {
		t.Error("a vocabulary that is not embedded loaded")
	}
}

// FuzzDecodeVocabulary: damaged input is an error, never a panic or a
// huge allocation.
func FuzzDecodeVocabulary(f *testing.F) {
	f.Add(vocabulary[:64])
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, gz []byte) {
		if ranks, err := decodeVocabulary(gz); err == nil && len(ranks) > len(gz)*1100 {
			t.Fatalf("%d tokens from %d bytes", len(ranks), len(gz))
		}
	})
}

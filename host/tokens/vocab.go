package tokens

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
)

//go:generate go run ./internal/genvocab

// vocabulary is cl100k_base: every token's bytes in rank order, each after
// its length as a uvarint, gzipped (internal/genvocab writes it).
//
//go:embed cl100k.bin.gz
var vocabulary []byte

// embeddedLoader is tiktoken's BpeLoader over the embedded vocabulary:
// it knows cl100k_base and nothing else, and fetches nothing.
type embeddedLoader struct{}

func (embeddedLoader) LoadTiktokenBpe(file string) (map[string]int, error) {
	if path.Base(file) != Encoding+".tiktoken" {
		return nil, fmt.Errorf("tokens: only %s is embedded, not %s", Encoding, path.Base(file))
	}
	return decodeVocabulary(vocabulary)
}

// decodeVocabulary reads the embedded form back into tiktoken's ranks.
func decodeVocabulary(gz []byte) (map[string]int, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("tokens: the embedded vocabulary: %w", err)
	}
	r := bufio.NewReader(zr)
	ranks := make(map[string]int, 100256)
	for rank := 0; ; rank++ {
		n, err := binary.ReadUvarint(r)
		if errors.Is(err, io.EOF) {
			return ranks, nil
		}
		if err != nil || n == 0 || n > 256 {
			return nil, fmt.Errorf("tokens: the embedded vocabulary is damaged at rank %d (length %d, %v)", rank, n, err)
		}
		tok := make([]byte, n)
		if _, err := io.ReadFull(r, tok); err != nil {
			return nil, fmt.Errorf("tokens: the embedded vocabulary is damaged at rank %d: %w", rank, err)
		}
		ranks[string(tok)] = rank
	}
}

// Command genvocab writes host/tokens/cl100k.bin.gz, the cl100k_base
// vocabulary that package tokens embeds, from the copy in the Go module
// github.com/pkoukk/tiktoken-go-loader (which go.mod pins): every token's
// bytes in rank order, each after its length as a uvarint, gzipped. That
// is 456 KB where the module's own embedding of four vocabularies as
// base64 text adds 7.4 MB to a binary. Run it with go generate
// ./host/tokens; TestVocabulary checks the file against the module.
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"os"

	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

func main() {
	if err := run("cl100k.bin.gz"); err != nil {
		fmt.Fprintln(os.Stderr, "genvocab:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	ranks, err := tiktoken_loader.NewOfflineLoader().LoadTiktokenBpe("cl100k_base.tiktoken")
	if err != nil {
		return err
	}
	byRank := make([]string, len(ranks))
	for tok, r := range ranks {
		if r < 0 || r >= len(byRank) || byRank[r] != "" {
			return fmt.Errorf("the ranks are not 0 to %d, each once (rank %d)", len(byRank)-1, r)
		}
		byRank[r] = tok
	}
	var raw bytes.Buffer
	for _, tok := range byRank {
		raw.Write(binary.AppendUvarint(nil, uint64(len(tok))))
		raw.WriteString(tok)
	}
	var gz bytes.Buffer
	w, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := w.Write(raw.Bytes()); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return os.WriteFile(out, gz.Bytes(), 0o644)
}

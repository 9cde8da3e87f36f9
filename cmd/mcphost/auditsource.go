package main

// Where `mcphost audit` reads entries: an audit file (and the files
// rotated from it), or the admin API of a running mcphost.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/mcphost-project/mcphost/host/audit"
	"github.com/mcphost-project/mcphost/host/store"
)

// maxAuditLine bounds one line read from a file: a line with a large
// result is long, but past this it is skipped rather than held.
const maxAuditLine = 16 << 20

// readAuditLines reads the complete lines of r (those ending in a
// newline) and calls emit with each audit line among them. It returns the
// bytes it consumed (a last line still being written is left for later)
// and how many lines were not audit lines or were too long.
func readAuditLines(r io.Reader, emit func(auditLine)) (consumed int64, bad int, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte // a line longer than the buffer, so far
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if !tooLong && len(long)+len(chunk) <= maxAuditLine {
				long = append(long, chunk...)
			} else {
				tooLong, long = true, nil
			}
			consumed += int64(len(chunk))
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return consumed, bad, nil // chunk, if any, is a line still being written
			}
			return consumed, bad, err
		}
		consumed += int64(len(chunk))
		line := chunk
		if long != nil || tooLong {
			line = append(long, chunk...)
		}
		switch {
		case tooLong || len(line) > maxAuditLine:
			bad++
		case len(bytes.TrimSpace(line)) == 0:
		default:
			if l, err := parseAuditLine(line); err == nil {
				emit(l)
			} else {
				bad++
			}
		}
		long, tooLong = nil, false
	}
}

// parseAuditLine decodes one line and keeps it compact.
func parseAuditLine(raw []byte) (auditLine, error) {
	e, err := audit.Decode(raw)
	if err != nil {
		return auditLine{}, err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, bytes.TrimSpace(raw)); err != nil {
		return auditLine{}, err
	}
	return auditLine{raw: b.Bytes(), e: e}, nil
}

// decodeAuditPage reads an answer of GET /v1/audit.
func decodeAuditPage(data []byte) ([]auditLine, string, error) {
	var page struct {
		Entries []json.RawMessage `json:"entries"`
		Next    string            `json:"next"`
	}
	if err := json.Unmarshal(data, &page); err != nil {
		return nil, "", fmt.Errorf("the admin API answered what is not a page of the audit log: %w", err)
	}
	out := make([]auditLine, 0, len(page.Entries))
	for i, raw := range page.Entries {
		l, err := parseAuditLine(raw)
		if err != nil {
			return nil, "", fmt.Errorf("the admin API's entry %d: %w", i, err)
		}
		out = append(out, l)
	}
	return out, page.Next, nil
}

// fileSource reads an audit file and the files rotated from it.
type fileSource struct {
	path string
	warn io.Writer // told of lines that are not audit lines; nil: nobody
	// Where newest stopped in the current file, for follow.
	at  int64
	cur os.FileInfo
}

func (s *fileSource) newest(_ context.Context, f auditFilter, n int, _ string) ([]auditLine, string, error) {
	files := audit.Files(s.path)
	if len(files) == 0 {
		return nil, "", fmt.Errorf("no audit file at %s", s.path)
	}
	var kept []auditLine
	bad := 0
	for _, name := range files {
		fh, err := os.Open(name)
		if err != nil {
			return nil, "", err
		}
		consumed, b, err := readAuditLines(fh, func(l auditLine) {
			if f.match(l.e) {
				kept = append(kept, l)
				if len(kept) > 2*n { // keep the newest n, copying now and then
					kept = append(kept[:0], kept[len(kept)-n:]...)
				}
			}
		})
		if name == s.path && err == nil {
			s.at = consumed
			s.cur, err = fh.Stat()
		}
		fh.Close()
		if err != nil {
			return nil, "", err
		}
		bad += b
	}
	if bad > 0 && s.warn != nil {
		verb := "are not audit lines"
		if bad == 1 {
			verb = "is not an audit line"
		}
		fmt.Fprintf(s.warn, "mcphost audit: %s of %s %s; skipped\n", plural(bad, "line"), s.path, verb)
	}
	if len(kept) > n {
		kept = kept[len(kept)-n:]
	}
	out := make([]auditLine, len(kept))
	for i, l := range kept {
		out[len(kept)-1-i] = l
	}
	return out, "", nil
}

// followEvery is how often follow looks for new lines.
const followEvery = 200 * time.Millisecond

func (s *fileSource) follow(ctx context.Context, f auditFilter, _ *auditLine, emit func(...auditLine) error) error {
	fh, fi, at, err := s.openFollowed()
	if err != nil {
		return err
	}
	defer func() { fh.Close() }()
	for {
		if _, err := fh.Seek(at, io.SeekStart); err != nil {
			return err
		}
		var fresh []auditLine
		consumed, _, err := readAuditLines(fh, func(l auditLine) {
			if f.match(l.e) {
				fresh = append(fresh, l)
			}
		})
		if err != nil {
			return err
		}
		at += consumed
		if err := emit(fresh...); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followEvery):
		}
		// Rotated (a new file at the path) or truncated: start over on
		// what the path holds now. The rest of the old file was read.
		now, err := os.Stat(s.path)
		switch {
		case err != nil:
			continue // between the rename and the new file
		case !os.SameFile(now, fi):
			next, err := os.Open(s.path)
			if err != nil {
				continue
			}
			fh.Close()
			fh, at = next, 0
			if fi, err = fh.Stat(); err != nil {
				return err
			}
		case now.Size() < at:
			at = 0
		}
	}
}

// openFollowed opens the file where newest stopped reading it, or at its
// end.
func (s *fileSource) openFollowed() (*os.File, os.FileInfo, int64, error) {
	fh, err := os.Open(s.path)
	if err != nil {
		return nil, nil, 0, err
	}
	fi, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, nil, 0, err
	}
	at := fi.Size()
	if s.cur != nil && os.SameFile(fi, s.cur) && s.at <= at {
		at = s.at
	} else if s.cur != nil {
		at = 0 // rotated since newest read it
	}
	return fh, fi, at, nil
}

// adminSource reads the audit log through the admin API.
type adminSource struct{ c *adminClient }

func (s *adminSource) newest(ctx context.Context, f auditFilter, n int, before string) ([]auditLine, string, error) {
	v := f.query()
	v.Set("limit", strconv.Itoa(min(n, store.MaxAuditLimit)))
	if before != "" {
		v.Set("before", before)
	}
	data, err := s.c.call(ctx, adminQuick, "GET", "/v1/audit?"+v.Encode(), nil, nil)
	if err != nil {
		return nil, "", err
	}
	return decodeAuditPage(data)
}

// follow asks every second for the entries since the last one it saw,
// paging back until it meets that one.
func (s *adminSource) follow(ctx context.Context, f auditFilter, last *auditLine, emit func(...auditLine) error) error {
	lastID, since := "", time.Now()
	if last != nil {
		lastID, since = last.e.ID, last.e.Time
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		g := f
		if g.since.Before(since) {
			g.since = since
		}
		var fresh []auditLine
		before := ""
		for {
			page, next, err := s.newest(ctx, g, store.MaxAuditLimit, before)
			if err != nil {
				return err
			}
			met := false
			for _, l := range page {
				if l.e.ID <= lastID {
					met = true
					break
				}
				fresh = append(fresh, l)
			}
			if met || next == "" {
				break
			}
			before = next
		}
		for i, j := 0, len(fresh)-1; i < j; i, j = i+1, j-1 {
			fresh[i], fresh[j] = fresh[j], fresh[i]
		}
		if len(fresh) > 0 {
			lastID, since = fresh[len(fresh)-1].e.ID, fresh[len(fresh)-1].e.Time
		}
		if err := emit(fresh...); err != nil {
			return err
		}
	}
}

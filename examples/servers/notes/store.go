package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// maxNoteBytes bounds one note, so one call cannot fill the disk.
const maxNoteBytes = 1 << 20

// ext is the file extension of every note.
const ext = ".md"

var (
	errNotFound = errors.New("no such note")
	errExists   = errors.New("note already exists")
)

// validName is what a note may be called: it becomes a file name and the
// host part of a notes:// URI, so no slashes, no leading dot, no "..".
var validName = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$`)

func checkName(name string) error {
	if !validName.MatchString(name) || strings.Contains(name, "..") {
		return fmt.Errorf("invalid note name %q: use 1 to 64 letters, digits, '_', '-' or '.', not starting with '.'", name)
	}
	return nil
}

// store keeps notes as NAME.md files in one directory. Files put there by
// other means are notes too.
type store struct {
	dir string
	mu  sync.Mutex // serialises writers, so an append never interleaves
}

// noteInfo describes a note without its text.
type noteInfo struct {
	Name     string
	Size     int64
	Modified time.Time
}

func openStore(dir string) (*store, error) {
	if dir == "" {
		return nil, errors.New("notes directory is empty")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("notes directory: %w", err)
	}
	return &store{dir: abs}, nil
}

func (s *store) path(name string) string { return filepath.Join(s.dir, name+ext) }

// list returns every note, sorted by name.
func (s *store) list() ([]noteInfo, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	notes := []noteInfo{}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ext)
		if !ok || !e.Type().IsRegular() || checkName(name) != nil {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		notes = append(notes, noteInfo{Name: name, Size: fi.Size(), Modified: fi.ModTime()})
	}
	sort.Slice(notes, func(i, j int) bool { return notes[i].Name < notes[j].Name })
	return notes, nil
}

// read returns a note's text and when it was last changed.
func (s *store) read(name string) (string, time.Time, error) {
	if err := checkName(name); err != nil {
		return "", time.Time{}, err
	}
	f, err := os.Open(s.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return "", time.Time{}, fmt.Errorf("%w: %q", errNotFound, name)
	}
	if err != nil {
		return "", time.Time{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", time.Time{}, err
	}
	if !fi.Mode().IsRegular() {
		return "", time.Time{}, fmt.Errorf("%w: %q", errNotFound, name)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxNoteBytes))
	if err != nil {
		return "", time.Time{}, err
	}
	return string(b), fi.ModTime(), nil
}

// add creates a note, or appends to an existing one when appendTo is set.
// It reports whether the note was created.
func (s *store) add(name, text string, appendTo bool) (created bool, size int64, err error) {
	if err := checkName(name); err != nil {
		return false, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	fi, err := os.Stat(s.path(name))
	switch {
	case err == nil && !appendTo:
		return false, 0, fmt.Errorf("%w: %q (set append to add to it, or delete it first)", errExists, name)
	case err == nil:
		if fi.Size()+int64(len(text)) > maxNoteBytes {
			return false, 0, fmt.Errorf("note %q would exceed %d bytes", name, maxNoteBytes)
		}
		flags = os.O_WRONLY | os.O_APPEND
		if fi.Size() > 0 && !strings.HasPrefix(text, "\n") {
			text = "\n" + text
		}
	case errors.Is(err, fs.ErrNotExist):
		created = true
		if len(text) > maxNoteBytes {
			return false, 0, fmt.Errorf("note %q would exceed %d bytes", name, maxNoteBytes)
		}
	default:
		return false, 0, err
	}
	f, err := os.OpenFile(s.path(name), flags, 0o600)
	if err != nil {
		return false, 0, err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return false, 0, err
	}
	if err := f.Close(); err != nil {
		return false, 0, err
	}
	fi, err = os.Stat(s.path(name))
	if err != nil {
		return false, 0, err
	}
	return created, fi.Size(), nil
}

// remove deletes a note; it reports whether there was one.
func (s *store) remove(name string) (bool, error) {
	if err := checkName(name); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := os.Remove(s.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// match is one line of a note that contains the query.
type match struct {
	Name string
	Line int
	Text string
}

// search finds the lines, and note names, containing query, ignoring case.
// It stops after limit matches and reports whether there were more.
func (s *store) search(query string, limit int) ([]match, bool, error) {
	q := strings.ToLower(query)
	notes, err := s.list()
	if err != nil {
		return nil, false, err
	}
	matches := []match{}
	for _, n := range notes {
		text, _, err := s.read(n.Name)
		if err != nil {
			continue // removed meanwhile
		}
		if strings.Contains(strings.ToLower(n.Name), q) {
			if len(matches) == limit {
				return matches, true, nil
			}
			matches = append(matches, match{Name: n.Name, Line: 0, Text: n.Name})
		}
		for i, line := range strings.Split(text, "\n") {
			if !strings.Contains(strings.ToLower(line), q) {
				continue
			}
			if len(matches) == limit {
				return matches, true, nil
			}
			matches = append(matches, match{Name: n.Name, Line: i + 1, Text: strings.TrimSpace(line)})
		}
	}
	return matches, false, nil
}

package audit

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// rotatingFile appends lines to a file. When the next line would take the
// file past maxSize, the file becomes path.1 (path.1 becomes path.2, and
// so on, the oldest beyond maxFiles files in all removed) and a new file
// starts: logrotate's numbering, so that readers find the files in order
// (Files). It belongs to one goroutine.
type rotatingFile struct {
	path     string
	maxSize  int64
	maxFiles int
	f        *os.File
	w        *bufio.Writer
	size     int64
}

func openRotating(path string, maxSize int64, maxFiles int) (*rotatingFile, error) {
	r := &rotatingFile{path: path, maxSize: maxSize, maxFiles: maxFiles}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *rotatingFile) open() error {
	// 0600: the lines say who called what, and may carry arguments.
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit: %w", err)
	}
	r.f, r.size = f, fi.Size()
	if r.w == nil {
		r.w = bufio.NewWriterSize(f, 64<<10)
	} else {
		r.w.Reset(f)
	}
	return nil
}

// write appends one line (with its newline), rotating first if it would
// not fit. A line longer than maxSize gets a file of its own.
func (r *rotatingFile) write(line []byte) error {
	if r.maxSize > 0 && r.size > 0 && r.size+int64(len(line)) > r.maxSize {
		if err := r.rotate(); err != nil {
			return err
		}
	}
	n, err := r.w.Write(line)
	r.size += int64(n)
	if err != nil {
		return fmt.Errorf("audit: writing %s: %w", r.path, err)
	}
	return nil
}

func (r *rotatingFile) rotate() error {
	if err := r.close(); err != nil {
		return err
	}
	if r.maxFiles <= 1 {
		if err := os.Remove(r.path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("audit: rotating: %w", err)
		}
		return r.open()
	}
	// Oldest first: path.(maxFiles-1) goes, each other moves up one.
	_ = os.Remove(backupName(r.path, r.maxFiles-1))
	for i := r.maxFiles - 2; i >= 1; i-- {
		if err := os.Rename(backupName(r.path, i), backupName(r.path, i+1)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("audit: rotating: %w", err)
		}
	}
	if err := os.Rename(r.path, backupName(r.path, 1)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("audit: rotating: %w", err)
	}
	return r.open()
}

func (r *rotatingFile) flush() error {
	if err := r.w.Flush(); err != nil {
		return fmt.Errorf("audit: writing %s: %w", r.path, err)
	}
	return nil
}

func (r *rotatingFile) close() error {
	if r.f == nil {
		return nil
	}
	err := r.flush()
	if cerr := r.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("audit: %w", cerr)
	}
	r.f = nil
	return err
}

func backupName(path string, i int) string { return path + "." + strconv.Itoa(i) }

// Files returns the files of an audit log written at path, oldest first:
// path.N, ..., path.1, path (those that exist). Reading them in this order
// reads the lines in the order they were written.
func Files(path string) []string {
	var older []string
	for i := 1; ; i++ {
		name := backupName(path, i)
		if _, err := os.Stat(name); err != nil {
			break
		}
		older = append(older, name)
	}
	out := make([]string, 0, len(older)+1)
	for i := len(older) - 1; i >= 0; i-- {
		out = append(out, older[i])
	}
	if _, err := os.Stat(path); err == nil {
		out = append(out, path)
	}
	return out
}

package main

import (
	"context"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"
)

// watchFiles signals on the returned channel when any of paths changed and
// then settled: no change for the settle interval, and (where the system
// can tell, see openForWriting) no process holding the file open for
// writing. A config written in steps (`{ cat servers; sleep 2; cat
// plugins; } > config.hcl`) is read only once its writer is done, never
// half-written. It watches the files' directories, because editors replace
// files by renaming another over them, which ends a watch on the file
// itself.
func watchFiles(ctx context.Context, paths []string, settle time.Duration, log hclog.Logger) (<-chan struct{}, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	want := make(map[string]bool, len(paths))
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		want[abs] = true
		if err := w.Add(filepath.Dir(abs)); err != nil {
			w.Close()
			return nil, err
		}
	}
	out := make(chan struct{}, 1)
	go func() {
		defer w.Close()
		timer := time.NewTimer(settle)
		timer.Stop()
		var fire <-chan time.Time
		changed := map[string]bool{}
		waiting := false
		for {
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				name := filepath.Clean(ev.Name)
				if !want[name] || ev.Op == fsnotify.Chmod {
					continue
				}
				changed[name] = true
				timer.Reset(settle)
				fire = timer.C
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				log.Warn("config watcher", "error", err)
			case <-fire:
				fire = nil
				if p := firstBusy(changed); p != "" {
					// Still being written: wait for the writer to close it.
					if !waiting {
						waiting = true
						log.Info("config file changed but is still open for writing; waiting for the writer to close it", "path", p)
					}
					timer.Reset(settle)
					fire = timer.C
					continue
				}
				waiting = false
				clear(changed)
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out, nil
}

// firstBusy returns one of paths that some process holds open for writing.
func firstBusy(paths map[string]bool) string {
	for p := range paths {
		if openForWriting(p) {
			return p
		}
	}
	return ""
}

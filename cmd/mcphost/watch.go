package main

import (
	"context"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"
)

// configDebounce lets an editor finish writing before a reload.
const configDebounce = 300 * time.Millisecond

// watchFiles signals on the returned channel when any of paths changes. It
// watches their directories, because editors replace files by renaming
// another over them, which ends a watch on the file itself.
func watchFiles(ctx context.Context, paths []string, log hclog.Logger) (<-chan struct{}, error) {
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
		var timer *time.Timer
		var fire <-chan time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if !want[filepath.Clean(ev.Name)] || ev.Op == fsnotify.Chmod {
					continue
				}
				if timer == nil {
					timer = time.NewTimer(configDebounce)
				} else {
					timer.Reset(configDebounce)
				}
				fire = timer.C
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				log.Warn("config watcher", "error", err)
			case <-fire:
				fire = nil
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out, nil
}

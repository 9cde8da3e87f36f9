package engine

import (
	"context"
	"errors"
	"time"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/pins"
)

// SyncPins shares the pin files of the builtin:pin plugins through the
// store now (host/pins.Shared), and reloads the plugins when the store
// changed a file, so that listings and calls follow at once. Without a
// store that has a key, pins stay in their files and it does nothing.
// The poll calls it every store poll interval; the admin API right after
// an approval, so that the other replicas see it within one interval.
func (e *Engine) SyncPins(ctx context.Context) error {
	if e.pins == nil {
		return nil
	}
	ps := pinPlugins(e.File())
	if len(ps) == 0 {
		return nil // no query every poll for a config without pins
	}
	changed, err := e.pins.Sync(ctx, ps)
	if changed {
		if rerr := e.ReloadPlugins(ctx); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

// syncPins is SyncPins before the host exists: no reload is needed.
func (e *Engine) syncPins(ctx context.Context, file *config.File) error {
	ps := pinPlugins(file)
	if len(ps) == 0 {
		return nil
	}
	_, err := e.pins.Sync(ctx, ps)
	return err
}

func (e *Engine) pollPins(ctx context.Context, interval time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, max(interval, 5*time.Second))
	defer cancel()
	return e.SyncPins(ctx)
}

// pinPlugins is file's builtin:pin plugins; one whose file maps to no
// host path is left out (loading it fails, and says why).
func pinPlugins(file *config.File) []pins.Plugin {
	var out []pins.Plugin
	for _, s := range file.Plugins {
		if s.Source != pins.Source {
			continue
		}
		if ps, err := pins.Find(file.Plugins, s.Name); err == nil {
			out = append(out, ps...)
		}
	}
	return out
}

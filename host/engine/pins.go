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
// The poll calls it every store poll interval.
func (e *Engine) SyncPins(ctx context.Context) error {
	e.pinMu.Lock()
	defer e.pinMu.Unlock()
	changed, err := e.syncPinFiles(ctx, e.File())
	if changed {
		if rerr := e.ReloadPlugins(ctx); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

// ApprovePins approves keys (all pending changes, with all) in the pin
// files of ps, as pins.Approve does, and makes the approval take effect
// at once: with a shared store the approval goes to the other replicas
// now rather than at the next poll, and the plugins reload (the pin
// plugin reads its file when loaded). It is ordered with SyncPins: a
// merge that read a pin file before the approval wrote it would write the
// pending entry back over it, and the approval would be lost. Failures
// after the approval is written are logged: it stands, and the next
// reload or poll takes it.
func (e *Engine) ApprovePins(ctx context.Context, ps []pins.Plugin, keys []string, all bool) (pins.Approval, error) {
	e.pinMu.Lock()
	defer e.pinMu.Unlock()
	res, err := pins.Approve(ps, keys, all, time.Now())
	if err != nil || len(res.Approved) == 0 {
		return res, err
	}
	if _, err := e.syncPinFiles(ctx, e.File()); err != nil {
		e.log.Warn("approved pins written; sharing them through the store failed (the next poll retries)", "error", err)
	}
	if err := e.ReloadPlugins(ctx); err != nil {
		e.log.Warn("approved pins written; reloading failed", "error", err)
	}
	return res, nil
}

// syncPinFiles merges the pin files of file's builtin:pin plugins with
// the store (host/pins.Shared), and reports whether that changed a file.
// Without a store that has a key, or without pins, it does nothing (no
// query every poll for a config without pins).
func (e *Engine) syncPinFiles(ctx context.Context, file *config.File) (bool, error) {
	if e.pins == nil {
		return false, nil
	}
	ps := pinPlugins(file)
	if len(ps) == 0 {
		return false, nil
	}
	return e.pins.Sync(ctx, ps)
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

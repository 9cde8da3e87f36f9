package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/host/store"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// merged is the host configuration of file plus the store's servers (by
// name, after the file's). A stored server whose name the file now takes,
// whose secrets do not open, or that no longer decodes, is left out
// (ServerInfo.Problem says why). It returns the store revision it read,
// for the caller to record once the host has taken the configuration.
//
// The servers of file's tool plugins come after the file's own; the tools
// manager must already serve file.ToolPlugins.
func (e *Engine) merged(ctx context.Context, file *config.File) (gateway.Config, int64, error) {
	cfg, rev, err := e.mergedStore(ctx, file)
	if err != nil {
		return cfg, rev, err
	}
	cfg.Listen = e.withUsers(cfg.Listen)
	return withToolServers(cfg, file, e.toolServerConfigs(ctx, file.ToolPlugins)), rev, nil
}

func (e *Engine) mergedStore(ctx context.Context, file *config.File) (gateway.Config, int64, error) {
	cfg := file.Host
	if e.store == nil {
		return cfg, 0, nil
	}
	stored, rev, err := e.store.Servers(ctx)
	if err != nil {
		return gateway.Config{}, 0, fmt.Errorf("reading the store: %w", err)
	}
	cfg.Servers = slices.Clone(file.Host.Servers)
	for _, sv := range stored {
		if _, taken := configServer(file, sv.Name); taken || isToolPlugin(file, sv.Name) {
			e.log.Warn("a stored server is not served: the config file defines one of the same name", "server", sv.Name)
			continue
		}
		if sv.SecretsErr != nil {
			e.log.Warn("a stored server is not served: its secrets do not open; replace or delete it", "server", sv.Name, "error", sv.SecretsErr)
			continue
		}
		spec, sec, err := decodeStored(sv)
		if err == nil {
			var sc upstream.ServerConfig
			if sc, err = spec.Join(sec).Server(file.Path); err == nil {
				cfg.Servers = append(cfg.Servers, sc)
				continue
			}
		}
		e.log.Warn("a stored server is not served: its definition is refused", "server", sv.Name, "error", err)
	}
	qs, err := quotaKind.applied(ctx, e, file)
	if err != nil {
		return gateway.Config{}, 0, fmt.Errorf("reading the store: %w", err)
	}
	cfg.Quotas = append(slices.Clip(file.Host.Quotas), qs...)
	ts, err := toolsetKind.applied(ctx, e, file)
	if err != nil {
		return gateway.Config{}, 0, fmt.Errorf("reading the store: %w", err)
	}
	cfg.Toolsets = append(slices.Clip(file.Host.Toolsets), ts...)
	return cfg, rev, nil
}

// Sync brings the host in line with the store now: servers added, changed
// or removed there (by this process or another replica) connect, reconnect
// or disconnect; the others are untouched. It does not wait for new
// servers to connect.
func (e *Engine) Sync(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	cfg, rev, err := e.merged(ctx, e.file)
	if err != nil {
		return err
	}
	// Not Reconfigure, which waits for new servers: the answer to an API
	// call must not hold the lock that long (changed waits, unlocked).
	if err := e.host.Update(cfg, nil); err != nil {
		return err
	}
	e.storeRev = rev
	return nil
}

// startPolling looks at the store's revision every interval and syncs
// when another process changed it.
func (e *Engine) startPolling(interval time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	e.stopPoll = cancel
	// Users apart, and more often: a revoked key must stop within a
	// second on every replica, and the users revision is one row.
	e.polling.Add(1)
	go e.pollRevision(ctx, min(interval, UsersPoll), e.usersPoll())
	if e.secrets != nil {
		e.polling.Add(1)
		go e.pollRevision(ctx, min(interval, UsersPoll), e.callerSecretsPoll())
	}
	e.polling.Add(1)
	go func() {
		defer e.polling.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		serversLog := pollLog{lost: "the store cannot be read; run-time servers stay as they are until it can", back: "the store can be read again"}
		pinsLog := pollLog{lost: "pins cannot be shared through the store; this replica keeps its pin files until they can", back: "pins are shared through the store again"}
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			serversLog.report(ctx, e.log, e.pollOnce(ctx, interval))
			if e.pins != nil {
				pinsLog.report(ctx, e.log, e.pollPins(ctx, interval))
			}
		}
	}()
}

func (e *Engine) pollOnce(ctx context.Context, interval time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, max(interval, 5*time.Second))
	defer cancel()
	rev, err := e.store.Revision(ctx)
	if err != nil {
		return err
	}
	if e.sharesWindows {
		if err := e.store.PruneWindows(ctx, time.Now()); err != nil {
			return err
		}
	}
	e.mu.Lock()
	seen := e.storeRev
	e.mu.Unlock()
	if rev == seen {
		return nil
	}
	e.log.Debug("the store changed; syncing", "revision", rev)
	return e.Sync(ctx)
}

// Store is the engine's store, nil without one.
func (e *Engine) Store() *store.Store { return e.store }

// revisionPoll is a revision of the store that the engine polls apart
// from the servers', and more often (usersPoll, callerSecretsPoll).
type revisionPoll struct {
	revision func(context.Context) (int64, error)
	mu       *sync.Mutex
	seen     *int64 // the revision last synced, under mu
	sync     func(context.Context) error
	log      pollLog
}

// pollRevision looks at p's revision every interval and syncs when it
// moved, until ctx ends.
func (e *Engine) pollRevision(ctx context.Context, interval time.Duration, p revisionPoll) {
	defer e.polling.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.log.report(ctx, e.log, p.once(ctx, interval))
	}
}

func (p revisionPoll) once(ctx context.Context, interval time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, max(interval, 5*time.Second))
	defer cancel()
	rev, err := p.revision(ctx)
	if err != nil {
		return err
	}
	p.mu.Lock()
	seen := *p.seen
	p.mu.Unlock()
	if rev == seen {
		return nil
	}
	return p.sync(ctx)
}

// pollLog logs the moment a poll starts failing (lost, with the error)
// and the moment it works again (back), not every failed tick.
type pollLog struct {
	lost, back string
	failing    bool
}

func (l *pollLog) report(ctx context.Context, log hclog.Logger, err error) {
	switch {
	case err != nil && !l.failing && ctx.Err() == nil:
		log.Warn(l.lost, "error", err)
	case err == nil && l.failing:
		log.Info(l.back)
	}
	l.failing = err != nil
}

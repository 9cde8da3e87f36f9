package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/host/toolplugin"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/plugins"
)

// Tool plugins (tools_plugin blocks) are loaded, limited, watched and
// swapped by a second plugins.Manager, whose generations hold only them,
// and each is served by a toolplugin.Server that the host reaches as an
// upstream of transport host.TransportInternal. A swap of that manager
// (a reload, or a changed .wasm seen by its watcher) moves each server to
// its plugin's new version; the server's list_changed then goes through
// the host like any upstream's.

// toolGrace is what a tool plugin's server adds to the plugin's timeout
// for the host's per-call timeout: the wait for an instance, validation.
const toolGrace = 10 * time.Second

// toolsListener passes the tools manager's swaps to the tool servers.
type toolsListener struct{ e *Engine }

func (l toolsListener) BeforeSwap(context.Context, *plugins.Chain) {}
func (l toolsListener) Swapped()                                   { l.e.refreshTools(context.Background()) }
func (l toolsListener) WatchReloaded(err error)                    { l.e.host.NoteReload("tool plugin files", err) }

// refreshTools moves every tool server to its plugin's current version.
func (e *Engine) refreshTools(ctx context.Context) {
	e.tmu.Lock()
	servers := make([]*toolplugin.Server, 0, len(e.toolServers))
	for _, s := range e.toolServers {
		servers = append(servers, s)
	}
	e.tmu.Unlock()
	for _, s := range servers {
		if err := s.Refresh(ctx); err != nil {
			e.log.Warn("a tool plugin's server keeps its current version", "plugin", s.Name(), "error", err)
		}
	}
}

// toolServerConfigs returns the host servers of specs, making a tool
// server for each new name and closing those whose plugin is gone. Call
// it once the tools manager serves specs.
func (e *Engine) toolServerConfigs(ctx context.Context, specs []plugins.Spec) []upstream.ServerConfig {
	e.tmu.Lock()
	if e.toolServers == nil {
		e.toolServers = map[string]*toolplugin.Server{}
	}
	out := make([]upstream.ServerConfig, 0, len(specs))
	var fresh []*toolplugin.Server
	for _, spec := range specs {
		s := e.toolServers[spec.Name]
		if s == nil {
			s = toolplugin.New(spec.Name, e.tmgr, e.log.Named("tools").Named(spec.Name))
			e.toolServers[spec.Name] = s
			fresh = append(fresh, s)
		}
		out = append(out, upstream.ServerConfig{Name: spec.Name, Transport: upstream.TransportInternal, Internal: s.MCPServer(), InternalTools: s,
			Timeout: spec.WithDefaults().Timeout + toolGrace, IdleTimeout: -1})
	}
	e.tmu.Unlock()
	for _, s := range fresh {
		if err := s.Refresh(ctx); err != nil {
			e.log.Warn("a tool plugin has no version to serve", "plugin", s.Name(), "error", err)
		}
	}
	return out
}

// dropToolServers closes the servers of plugins no longer in specs, once
// the host no longer serves them.
// With wait it returns once they have closed.
func (e *Engine) dropToolServers(specs []plugins.Spec, wait bool) {
	e.tmu.Lock()
	var gone []*toolplugin.Server
	for name, s := range e.toolServers {
		if !slices.ContainsFunc(specs, func(sp plugins.Spec) bool { return sp.Name == name }) {
			gone = append(gone, s)
			delete(e.toolServers, name)
		}
	}
	e.tmu.Unlock()
	for _, s := range gone {
		if wait {
			s.Close()
		} else {
			go s.Close() // after its calls in flight
		}
	}
}

// withToolServers adds the tool plugins' servers to cfg, after the file's
// servers and before the stored ones.
func withToolServers(cfg gateway.Config, file *config.File, tools []upstream.ServerConfig) gateway.Config {
	if len(tools) == 0 {
		return cfg
	}
	n := len(file.Host.Servers)
	servers := make([]upstream.ServerConfig, 0, len(cfg.Servers)+len(tools))
	servers = append(servers, cfg.Servers[:n]...)
	servers = append(servers, tools...)
	servers = append(servers, cfg.Servers[n:]...)
	cfg.Servers = servers
	return cfg
}

// isToolPlugin reports whether file has a tools_plugin named name.
func isToolPlugin(file *config.File, name string) bool {
	return slices.ContainsFunc(file.ToolPlugins, func(s plugins.Spec) bool { return s.Name == name })
}

// ToolPlugins is the manager of the tool plugins: their status and
// generations.
func (e *Engine) ToolPlugins() *plugins.Manager { return e.tmgr }

// storeKV keeps tool plugins' key-value stores in the engine's store.
type storeKV struct{ e *Engine }

func (k storeKV) Get(ctx context.Context, plugin, key string) ([]byte, bool, error) {
	return k.e.store.KVGet(ctx, plugin, key)
}

func (k storeKV) Set(ctx context.Context, plugin, key string, value []byte) error {
	if value == nil {
		return k.e.store.KVDelete(ctx, plugin, key)
	}
	if err := k.e.store.KVSet(ctx, plugin, key, value); err != nil {
		return fmt.Errorf("the store: %w", err)
	}
	return nil
}

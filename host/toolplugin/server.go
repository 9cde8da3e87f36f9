// Package toolplugin serves a tool plugin (ABI 1.4) as an in-process MCP
// server: a go-sdk mcp.Server whose tools are the plugin's, each call run
// on the plugin's pool of instances. The host connects to it like to any
// upstream (host.TransportInternal, over mcp.NewInMemoryTransports), so the
// catalog, naming, the policy chain, listings, list_changed, status,
// metrics (and an audit log, once mcphost has one) apply to its tools unchanged.
//
// The plugin itself is loaded, limited, watched and swapped by a
// plugins.Manager; Refresh moves the server to the manager's current
// version of it: calls in flight finish on the version they started on,
// and the server's tool list changes (with notifications/tools/list_changed)
// only where the new version's tools differ.
package toolplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/plugins"
)

// Source gives the current loaded version of a plugin, with a reference
// taken (a *plugins.Manager).
type Source interface {
	Plugin(name string) (*plugins.Plugin, bool)
}

// Version is what a server's tools/list reports as its version.
const Version = "1"

// Server serves one tool plugin. It is safe for concurrent use.
type Server struct {
	name string
	src  Source
	log  hclog.Logger
	srv  *mcp.Server

	mu    sync.Mutex             // serialises Refresh and Close; guards cur's swap
	cur   *version               // the version new calls run on; nil before the first Refresh
	defs  map[string]abi.ToolDef // what srv lists, by name
	close bool
}

// version is one loaded version of the plugin, held while it serves.
type version struct {
	p    *plugins.Plugin
	refs sync.WaitGroup // calls in flight on it
}

// New returns a server for the tool plugin name of src, with no tools
// until Refresh. log may be nil.
func New(name string, src Source, log hclog.Logger) *Server {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	s := &Server{name: name, src: src, log: log, defs: map[string]abi.ToolDef{}}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "mcphost-tools-" + name, Version: Version}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}, Logging: &mcp.LoggingCapabilities{}},
	})
	return s
}

// MCPServer is the in-process server (host.ServerConfig.Internal).
func (s *Server) MCPServer() *mcp.Server { return s.srv }

// Name is the plugin's name.
func (s *Server) Name() string { return s.name }

// Refresh moves the server to the source's current version of the plugin,
// if it is another: new calls run on it from now on, the old version is
// released once its calls in flight have finished, and the tool list is
// updated where it changed. An error (the plugin is not in the source)
// leaves the server as it was.
func (s *Server) Refresh(ctx context.Context) error {
	p, ok := s.src.Plugin(s.name)
	if !ok {
		return fmt.Errorf("toolplugin: %s: no such plugin loaded", s.name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.close {
		_ = p.Release(ctx)
		return errors.New("toolplugin: closed")
	}
	if s.cur != nil && s.cur.p == p {
		_ = p.Release(ctx)
		return nil
	}
	next := &version{p: p}
	defs := map[string]abi.ToolDef{}
	var add []*mcp.Tool
	for _, d := range p.Tools() {
		defs[d.Name] = d
		if old, ok := s.defs[d.Name]; ok && reflect.DeepEqual(old, d) {
			continue
		}
		t, err := mcpTool(d)
		if err != nil { // decodeTools has checked what this needs
			_ = p.Release(ctx)
			return fmt.Errorf("toolplugin: %s: tool %s: %w", s.name, d.Name, err)
		}
		add = append(add, t)
	}
	var remove []string
	for name := range s.defs {
		if _, ok := defs[name]; !ok {
			remove = append(remove, name)
		}
	}
	prev := s.cur
	s.cur = next // before AddTool: a call of a new tool must find it
	s.defs = defs
	if len(remove) > 0 {
		s.srv.RemoveTools(remove...)
	}
	for _, t := range add {
		s.srv.AddTool(t, s.handler(t.Name))
	}
	if prev != nil {
		go retire(prev, s.log)
	}
	s.log.Debug("tool plugin version serving", "sha256", p.SHA256(), "tools", len(defs), "added_or_changed", len(add), "removed", len(remove))
	return nil
}

// retire releases a version once its calls in flight have finished.
func retire(v *version, log hclog.Logger) {
	v.refs.Wait()
	if err := v.p.Release(context.Background()); err != nil {
		log.Warn("closing an old version of a tool plugin", "error", err)
	}
}

// Close stops serving new calls and releases the current version (calls in
// flight finish first).
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.close {
		return
	}
	s.close = true
	if s.cur != nil {
		v := s.cur
		s.cur = nil
		retire(v, s.log)
	}
}

// acquire returns the current version with a call counted on it.
func (s *Server) acquire() *version {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.cur
	if v != nil {
		v.refs.Add(1)
	}
	return v
}

// mcpTool is the go-sdk's Tool for a definition.
func mcpTool(d abi.ToolDef) (*mcp.Tool, error) {
	t := &mcp.Tool{Name: d.Name, Title: d.Title, Description: d.Description,
		InputSchema: d.InputSchema}
	if len(d.OutputSchema) > 0 {
		t.OutputSchema = d.OutputSchema
	}
	if a := d.Annotations; a != nil {
		t.Annotations = &mcp.ToolAnnotations{Title: a.Title, ReadOnlyHint: derefFalse(a.ReadOnlyHint),
			DestructiveHint: a.DestructiveHint, IdempotentHint: derefFalse(a.IdempotentHint), OpenWorldHint: a.OpenWorldHint}
	}
	if len(d.Icons) > 0 {
		if err := json.Unmarshal(d.Icons, &t.Icons); err != nil {
			return nil, fmt.Errorf("icons: %w", err)
		}
	}
	if len(d.Meta) > 0 {
		if err := json.Unmarshal(d.Meta, &t.Meta); err != nil {
			return nil, fmt.Errorf("_meta: %w", err)
		}
	}
	return t, nil
}

func derefFalse(b *bool) bool { return b != nil && *b }

// handler runs one tool for the go-sdk's server session (the path without
// the host's shortcuts; CallToolRaw is the other).
func (s *Server) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ss := req.Session
		call := &clientCall{token: req.Params.GetProgressToken()}
		if ss != nil {
			call.progress = ss.NotifyProgress
			call.log = func(ctx context.Context, p *mcp.LoggingMessageParams) (bool, error) {
				return true, ss.Log(ctx, p) // the session drops what its level does not let through
			}
		}
		raw, err := s.invoke(ctx, name, req.Params.Arguments, req.Params.Meta, call)
		if err != nil {
			return nil, err
		}
		res := new(mcp.CallToolResult)
		if err := json.Unmarshal(raw, res); err != nil {
			s.log.Warn("tool result refused", "tool", name, "error", err)
			return errorResult("tool %s failed: it returned a result that is not an MCP CallToolResult", name), nil
		}
		return res, nil
	}
}

// CallToolRaw implements host.InternalTools: the host's fast path, which
// hands the call over without the go-sdk's server session.
func (s *Server) CallToolRaw(ctx context.Context, c *upstream.InternalCall) (json.RawMessage, error) {
	call := &clientCall{token: c.Meta.GetMeta()["progressToken"], progress: c.Progress, log: c.Log}
	return s.invoke(ctx, c.Name, c.Arguments, c.Meta, call)
}

// invoke runs one tool on the version current when the call arrives and
// returns its result as MCP JSON; the error is only the context's.
func (s *Server) invoke(ctx context.Context, name string, args json.RawMessage, meta mcp.Meta, call *clientCall) (json.RawMessage, error) {
	v := s.acquire()
	if v == nil {
		return encodeResult(errorResult("tool %s is not being served: the plugin %s is closed", name, s.name))
	}
	defer v.refs.Done()
	in := &abi.ToolInvokeInput{Name: name, Arguments: args, Caller: callerOf(meta), ProgressToken: call.token}
	out, err := v.p.InvokeTool(ctx, in, call)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err() // the client cancelled, or the host's timeout passed
		}
		s.log.Warn("tool call failed", "tool", name, "error", err)
		return encodeResult(errorResult("tool %s failed: %s", name, failure(err)))
	}
	if te := out.ToolError; te != nil {
		r := errorResult("%s", te.Message)
		if te.Field != "" {
			r.Meta = mcp.Meta{"io.mcphost/field": te.Field}
			if m := te.Message; !hasFieldPrefix(m, te.Field) {
				r.Content = []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s: %s", te.Field, m)}}
			}
		}
		return encodeResult(r)
	}
	return out.Result, nil
}

func encodeResult(r *mcp.CallToolResult) (json.RawMessage, error) {
	return json.Marshal(r)
}

func hasFieldPrefix(msg, field string) bool {
	return len(msg) > len(field) && msg[:len(field)] == field && msg[len(field)] == ':'
}

// failure says what went wrong with a guest, without the engine's own
// text (a Wasm stack, the guest's stderr), which goes to the host log.
func failure(err error) string {
	var pe *plugins.PluginError
	switch {
	case errors.Is(err, plugins.ErrTimeout):
		return "timed out"
	case errors.Is(err, plugins.ErrMemoryLimit):
		return "stopped: memory limit reached"
	case errors.Is(err, plugins.ErrTrap):
		return "crashed"
	case errors.Is(err, plugins.ErrOutputTooLarge):
		return "output too large"
	case errors.Is(err, plugins.ErrTooDeep):
		return "invalid output: " + plugins.ErrTooDeep.Error()
	case errors.Is(err, plugins.ErrInvalidOutput):
		return "invalid output"
	case errors.Is(err, plugins.ErrUnavailable):
		return "unavailable after repeated crashes; retrying later"
	case errors.Is(err, plugins.ErrClosed):
		return "the plugin was closed"
	case errors.As(err, &pe):
		if pe.Message != "" {
			return "returned an error: " + pe.Message
		}
		return "returned an error"
	}
	return "failed"
}

func errorResult(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// callerOf reads the caller the host put in the call's _meta.
func callerOf(meta mcp.Meta) abi.Caller {
	var c abi.Caller
	raw, ok := meta[abi.CallerMetaKey]
	if !ok {
		return c
	}
	b, err := json.Marshal(raw)
	if err == nil {
		_ = json.Unmarshal(b, &c)
	}
	return c
}

// clientCall sends a call's progress and log messages to its client, the
// host's upstream session, which routes them to the downstream client.
type clientCall struct {
	token    any // the progress token the call came with; nil for none
	progress func(context.Context, *mcp.ProgressNotificationParams) error
	log      func(context.Context, *mcp.LoggingMessageParams) (bool, error)
}

func (c *clientCall) Progress(ctx context.Context, data []byte) (bool, error) {
	var p abi.ToolProgress
	if err := json.Unmarshal(data, &p); err != nil {
		return false, fmt.Errorf("progress: %w", err)
	}
	if c.token == nil || c.progress == nil {
		return false, nil
	}
	err := c.progress(ctx, &mcp.ProgressNotificationParams{ProgressToken: c.token, Progress: p.Progress, Total: p.Total, Message: p.Message})
	return err == nil, err
}

func (c *clientCall) Log(ctx context.Context, data []byte) (bool, error) {
	var l abi.ToolLog
	if err := json.Unmarshal(data, &l); err != nil {
		return false, fmt.Errorf("log: %w", err)
	}
	if _, ok := wire.LogRank(l.Level); !ok {
		return false, fmt.Errorf("log: unknown level %q", l.Level)
	}
	if c.log == nil {
		return false, nil
	}
	var d any = string(l.Data)
	if len(l.Data) > 0 {
		if err := json.Unmarshal(l.Data, &d); err != nil {
			return false, fmt.Errorf("log: data: %w", err)
		}
	}
	return c.log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(l.Level), Logger: l.Logger, Data: d})
}

// Interface guard.
var _ upstream.InternalTools = (*Server)(nil)

package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/codemode"
	"github.com/mcphost-project/mcphost/host/internal/wire"
)

// Code mode (tools { exposure = "code" }, host/codemode): a caller's
// tools/list holds one tool, run_code, whose description declares the
// caller's tools; a run_code call runs the script, and each tool call the
// script makes is a tools/call of the caller's own through callTool,
// with policies, quotas, audit, metrics and traces as for the client's.
// The caller's tools stay callable by name.

// codeMode holds the engine of the current code limits, compiled on the
// first run_code call; a reload that changes the limits builds another
// and closes the old one once its runs are done.
type codeMode struct {
	mu     sync.Mutex
	cur    *codeEngine
	closed bool // by Host.Close: no engine is built after it
}

type codeEngine struct {
	lim    codemode.Limits
	engine *codemode.Engine
	runs   sync.WaitGroup
}

// codeExposed reports whether the config asks for code mode, with its
// limits.
func (h *Host) codeExposed() (codemode.Limits, bool) {
	cfg := h.Config()
	return cfg.Code, cfg.Tools.Exposure == catalog.ExposureCode
}

// exposeCode makes v's listing the run_code tool alone, under code mode.
func (h *Host) exposeCode(v *view) {
	if lim, ok := h.codeExposed(); ok {
		v.result = &mcp.ListToolsResult{Tools: []*mcp.Tool{codemode.Tool(v.tools, lim)}}
	}
}

// engine returns an engine for lim, and a func to call when the run is
// done.
func (c *codeMode) engine(ctx context.Context, lim codemode.Limits) (*codemode.Engine, func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, nil, codemode.ErrClosed
	}
	if c.cur == nil || c.cur.lim != lim {
		e, err := codemode.New(context.WithoutCancel(ctx), lim, nil)
		if err != nil {
			return nil, nil, err
		}
		if old := c.cur; old != nil {
			go func() { old.runs.Wait(); _ = old.engine.Close(context.Background()) }()
		}
		c.cur = &codeEngine{lim: lim, engine: e}
	}
	ce := c.cur
	ce.runs.Add(1)
	return ce.engine, ce.runs.Done, nil
}

// warmCode compiles code mode's engine in the background, under code
// mode, so that the first run_code does not wait for it (about a second).
func (h *Host) warmCode() {
	if lim, ok := h.codeExposed(); ok {
		go func() {
			if _, done, err := h.code.engine(context.Background(), lim); err == nil {
				done()
			} else {
				h.log.Warn("code mode: compiling the script engine failed; run_code calls will try again", "error", err)
			}
		}()
	}
}

// close closes the engine (Host.Close).
func (c *codeMode) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.cur != nil {
		_ = c.cur.engine.Close(context.Background())
		c.cur = nil
	}
}

// runCode answers a run_code call: the script's outcome as a tool result
// (an error result when it failed), or a JSON-RPC error for arguments
// that are not a script.
func (h *Host) runCode(ctx context.Context, caller abi.Caller, args json.RawMessage, ss *mcp.ServerSession, tr *callTrace) (mcp.Result, error) {
	lim, _ := h.codeExposed()
	script, err := codemode.DecodeInput(args)
	if err != nil {
		return nil, err // invalid params (callError)
	}
	v, err := h.view(ctx, caller)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(v.tools))
	for i := range v.tools {
		names[i] = v.tools[i].Name
	}
	e, done, err := h.code.engine(ctx, lim)
	if err != nil {
		return nil, fmt.Errorf("host: code mode: %w", err)
	}
	defer done()
	out, err := e.Run(ctx, script, names, func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
		return h.innerCall(ctx, caller, name, args, ss)
	})
	if err != nil {
		return nil, fmt.Errorf("host: code mode: %w", err)
	}
	h.log.Debug("run_code finished", "calls", out.Calls, "duration", out.Duration, "failed", out.Err != "", "stopped", out.Stopped)
	return out.Result(), nil
}

// innerCall is one tool call of a script: the caller's tools/call, whole
// (callTool), in a span of its own under run_code's.
func (h *Host) innerCall(ctx context.Context, caller abi.Caller, name string, args json.RawMessage, ss *mcp.ServerSession) (_ json.RawMessage, err error) {
	if name == codemode.ToolName {
		return nil, fmt.Errorf("%s cannot call itself", codemode.ToolName)
	}
	var res mcp.Result
	if h.tracer != nil {
		var span trace.Span
		ctx, span = h.tracer.Start(ctx, "tools/call "+name, trace.SpanKindInternal,
			attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", name),
			attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("mcphost.via", codemode.ToolName))
		defer func() { endRequestSpan(span, res, err) }()
	}
	res, err = h.callTool(ctx, caller, name, args, nil, ss)
	if err != nil {
		return nil, errors.New(wire.ErrorText(err))
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("the result of %s could not be encoded: %w", name, err)
	}
	return b, nil
}

package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Engines serves run_code for a gateway: it keeps the engine of the limits
// in force, compiled on first use (or by Warm); when the limits change (a
// reload), the next run builds another and the old one is closed once its
// runs are done. The zero value is ready; it is safe for concurrent use.
type Engines struct {
	mu     sync.Mutex
	cur    *engineRef
	closed bool // by Close: no engine is built after it
}

type engineRef struct {
	lim    Limits
	engine *Engine
	runs   sync.WaitGroup
}

// get returns the engine of lim, and a func to call when its run is done.
func (es *Engines) get(lim Limits) (*Engine, func(), error) {
	lim = lim.WithDefaults()
	es.mu.Lock()
	defer es.mu.Unlock()
	if es.closed {
		return nil, nil, ErrClosed
	}
	if es.cur == nil || es.cur.lim != lim {
		e, err := New(context.Background(), lim, nil)
		if err != nil {
			return nil, nil, err
		}
		if old := es.cur; old != nil {
			go func() { old.runs.Wait(); _ = old.engine.Close(context.Background()) }()
		}
		es.cur = &engineRef{lim: lim, engine: e}
	}
	ref := es.cur
	ref.runs.Add(1)
	return ref.engine, ref.runs.Done, nil
}

// Warm compiles the engine of lim now (about a second), so that the first
// run_code does not wait for it.
func (es *Engines) Warm(lim Limits) error {
	_, done, err := es.get(lim)
	if err == nil {
		done()
	}
	return err
}

// Serve answers a run_code call with arguments args: the script's outcome
// as a tool result (an error result when the script failed), with the
// tools named in tools as its functions, each call answered by call
// (which must be the caller's own tools/call). The error is for
// arguments that are not a script (ErrInvalidInput) and for the engine's
// own failures.
func (es *Engines) Serve(ctx context.Context, lim Limits, args json.RawMessage, tools []string, call CallFunc) (*mcp.CallToolResult, error) {
	script, err := DecodeInput(args)
	if err != nil {
		return nil, err
	}
	e, done, err := es.get(lim)
	if err != nil {
		return nil, fmt.Errorf("codemode: %w", err)
	}
	defer done()
	out, err := e.Run(ctx, script, tools, call)
	if err != nil {
		return nil, err
	}
	return out.Result(), nil
}

// Close closes the engine; runs in flight end with an error.
func (es *Engines) Close() {
	es.mu.Lock()
	defer es.mu.Unlock()
	es.closed = true
	if es.cur != nil {
		_ = es.cur.engine.Close(context.Background())
		es.cur = nil
	}
}

// Tracer starts spans (host/telemetry's Tracer is one).
type Tracer interface {
	Start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span)
}

// Traced wraps call so that each of a script's tool calls has a span of
// its own, a child of the context's (run_code's request span), named and
// marked as a client's tools/call is, failed when the call fails or its
// result is an error.
func Traced(t Tracer, call CallFunc) CallFunc {
	return func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
		ctx, span := t.Start(ctx, "tools/call "+name, trace.SpanKindInternal,
			attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", name),
			attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("mcphost.via", ToolName))
		defer span.End()
		res, err := call(ctx, name, args)
		var r struct {
			IsError bool `json:"isError"`
		}
		switch {
		case err != nil:
			span.SetStatus(codes.Error, err.Error())
		case json.Unmarshal(res, &r) == nil && r.IsError:
			span.SetAttributes(attribute.String("error.type", "tool_error"))
			span.SetStatus(codes.Error, "the tool answered with an error")
		}
		return res, err
	}
}

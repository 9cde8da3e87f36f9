package gateway

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/codemode"
	"github.com/mcphost-project/mcphost/host/internal/wire"
)

// Code mode (tools { exposure = "code" }, host/codemode): a caller's
// listing is run_code alone, declaring the caller's tools; each tool call
// of its script is the caller's own callTool (policies, quotas, audit,
// metrics), in a span of its own. The tools stay callable by name.

// exposeCode makes v's listing run_code alone, under code mode.
func (h *Host) exposeCode(v *view) {
	if cfg := h.Config(); cfg.Tools.Exposure == catalog.ExposureCode {
		v.result = &mcp.ListToolsResult{Tools: []*mcp.Tool{codemode.Tool(v.tools, cfg.Code)}}
	}
}

// warmCode compiles the engine in the background, under code mode.
func (h *Host) warmCode() {
	if cfg := h.Config(); cfg.Tools.Exposure == catalog.ExposureCode {
		go func() {
			if err := h.code.Warm(cfg.Code); err != nil {
				h.log.Warn("code mode: compiling the script engine failed; run_code will try again", "error", err)
			}
		}()
	}
}

// runCode answers a run_code call of caller.
func (h *Host) runCode(ctx context.Context, caller abi.Caller, args json.RawMessage, ss *mcp.ServerSession) (mcp.Result, error) {
	v, err := h.view(ctx, caller)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(v.tools))
	for i := range v.tools {
		names[i] = v.tools[i].Name
	}
	call := func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
		res, err := h.callTool(ctx, caller, name, args, nil, ss)
		if err != nil {
			return nil, errors.New(wire.ErrorText(err))
		}
		return json.Marshal(res)
	}
	if h.tracer != nil {
		call = codemode.Traced(h.tracer, call)
	}
	res, err := h.code.Serve(ctx, h.Config().Code, args, names, call)
	if err != nil {
		return nil, err
	}
	return res, nil
}

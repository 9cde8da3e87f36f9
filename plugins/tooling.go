package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/plugins/internal/extismhost"
	"github.com/mcphost-project/mcphost/plugins/internal/wasmrewrite"
)

// CheckHeader reports whether head, the first bytes of a plugin file,
// starts a WebAssembly binary module, with an error that says what the
// file looks like instead. It wraps ErrCompile.
func CheckHeader(head []byte) error {
	if len(head) >= len(wasmrewrite.Header) && bytes.Equal(head[:len(wasmrewrite.Header)], wasmrewrite.Header) {
		return nil
	}
	if len(head) >= 4 && bytes.Equal(head[:4], wasmrewrite.Header[:4]) {
		return fmt.Errorf("%w: a WebAssembly module of version %x, want version 1 (binary, not a component)", ErrCompile, head[4:min(len(head), 8)])
	}
	if len(head) > 8 {
		head = head[:8]
	}
	if len(head) == 0 {
		return fmt.Errorf("%w: the file is empty, not a WebAssembly module", ErrCompile)
	}
	return fmt.Errorf("%w: not a WebAssembly module (it starts with %q; a module starts with \"\\0asm\")", ErrCompile, head)
}

// Check loads spec as a reload would, and closes it: the source is read
// and its sha256 checked, the module compiled and instantiated, and
// describe run with the plugin's configuration, so that a configuration
// the plugin refuses (a bad value, a key it does not read) shows as well
// as a module that does not load. Guest code runs only as far as describe.
func Check(ctx context.Context, rt *Runtime, spec Spec) error {
	spec.Instances = 1
	p, err := rt.Load(ctx, spec)
	if err != nil {
		return err
	}
	if err := p.misplacedTool(); err != nil {
		_ = p.Close(ctx)
		return fmt.Errorf("plugins: %s: %w", spec.Name, err)
	}
	return p.Close(ctx)
}

// Info describes a plugin file, as `mcphost plugin inspect` shows it.
type Info struct {
	Path            string
	Size            int
	SHA256          string
	ABI             string
	Name            string
	Version         string
	Hooks           []string
	Exports         []string // every exported function, sorted
	CompileTime     time.Duration
	InstantiateTime time.Duration // instantiation and describe of one instance
}

// commandHint adds to a trap in describe the likely cause when the module
// is a WASI command (it exports _start, and no _initialize or constructor
// that sets its language runtime up): a Go plugin built without
// -buildmode=c-shared, whose exports then run on a runtime never started.
func commandHint(err error, exports map[string]bool) error {
	if !errors.Is(err, ErrTrap) || !exports["_start"] || exports["_initialize"] || exports["__wasm_call_ctors"] {
		return err
	}
	return fmt.Errorf("%w (the module is a WASI command: it exports _start and no _initialize, so its runtime is never set up for the hooks; a Go plugin must be built with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared)", err)
}

// Inspect compiles the module at path (a file, or "builtin:NAME" as in
// Spec.Source), instantiates it once and reads its describe output, with
// the configuration the host would give it: config (a plugin block's
// config, which a policy may need to describe itself: builtin:deny wants
// what to deny), a builtin's own, and the ABI version. When the module loads but fails the load check, Info is filled
// as far as it got and the error says why; an error that wraps ErrSource,
// ErrCompile or ErrInstantiate means there was no module to describe.
func Inspect(ctx context.Context, rt *Runtime, path string, config map[string]string) (Info, error) {
	info := Info{Path: path}
	spec := Spec{Name: filepath.Base(path), Source: path, Instances: 1, Config: config}.WithDefaults()
	src, err := rt.resolve(spec)
	info.Size = len(src.wasm)
	if err != nil {
		return info, err
	}
	info.SHA256 = src.sha
	mod, err := rt.acquire(ctx, src.wasm, info.SHA256)
	if err != nil {
		return info, err
	}
	info.CompileTime = mod.compileTime
	p := &Plugin{rt: rt, spec: spec, mod: mod, log: rt.log.Named(spec.Name),
		sem: make(chan struct{}, 1), idle: make(chan *instance, 1), done: make(chan struct{})}
	p.src = src
	p.env = &extismhost.Env{Config: p.src.config, Log: p.log, LogLevel: rt.guestLevel} // no allowed_hosts
	p.modCfg = defaultModuleConfig()
	start := time.Now()
	in, err := p.newInstance(ctx)
	if err != nil {
		rt.release(mod)
		return info, err
	}
	defer rt.release(mod)
	exports := in.exports()
	for name := range exports {
		info.Exports = append(info.Exports, name)
	}
	sort.Strings(info.Exports)
	if _, ok := exports[abi.ExportDescribe]; !ok {
		in.close()
		info.InstantiateTime = time.Since(start)
		return info, fmt.Errorf("%w: %s is not exported", ErrMissingExport, abi.ExportDescribe)
	}
	out, keep, err := p.callInstance(ctx, in, "describe", abi.ExportDescribe, nil)
	if keep {
		in.close()
	}
	info.InstantiateTime = time.Since(start)
	if err != nil {
		return info, commandHint(err, exports)
	}
	var raw abi.Describe
	_ = json.Unmarshal(out, &raw)
	info.ABI, info.Name, info.Version, info.Hooks = raw.ABI, raw.Name, raw.Version, raw.Hooks
	d, err := decodeDescribe(out, func(name string) bool { _, ok := exports[name]; return ok })
	if err != nil {
		return info, err
	}
	info.Hooks = d.Hooks
	return info, nil
}

// RunHook loads spec (with a pool of one), runs hook on input as the host
// would, and checks the output as the host would: for tools_list against
// the tools in input. It returns the raw output also when the check fails
// (the error then wraps ErrInvalidOutput). A tool_result output of
// {"unchanged":true} is returned as the input's result.
func RunHook(ctx context.Context, rt *Runtime, spec Spec, hook string, input []byte) ([]byte, error) {
	if _, ok := abi.ExportForHook(hook); !ok {
		return nil, fmt.Errorf("%w: unknown hook %q", ErrNoHook, hook)
	}
	spec.Instances = 1
	p, err := rt.Load(ctx, spec)
	if err != nil {
		return nil, err
	}
	defer p.Close(context.WithoutCancel(ctx))
	out, err := p.Call(ctx, hook, input)
	if err != nil {
		return nil, err
	}
	switch hook {
	case abi.HookToolsList:
		var in abi.ToolsListInput
		if err := json.Unmarshal(input, &in); err != nil {
			return out, fmt.Errorf("plugins: tools_list input: %w", err)
		}
		_, err = decodeToolsList(out, in.Tools, nil)
	case abi.HookToolCall:
		_, err = decodeCallDecision(out)
	case abi.HookList:
		var in abi.ListInput
		if err := json.Unmarshal(input, &in); err != nil {
			return out, fmt.Errorf("plugins: list input: %w", err)
		}
		_, err = decodeList(out, in.Items)
	case abi.HookRequest:
		_, err = decodeRequestDecision(out)
	case abi.HookMessage:
		_, err = decodeMessage(out)
	case abi.HookToolResult:
		var r *abi.CallToolResult
		if r, err = decodeToolResult(out); err == nil && r == nil {
			// {"unchanged":true}: show what the host passes on, so the
			// output compares with a golden written natively.
			var in struct {
				Result json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal(input, &in); err != nil {
				return out, fmt.Errorf("plugins: tool_result input: %w", err)
			}
			return json.Marshal(struct {
				Result json.RawMessage `json:"result"`
			}{in.Result})
		}
	}
	return out, err
}

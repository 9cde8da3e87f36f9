package extismhost

import (
	"bytes"
	"context"
	"fmt"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// KV is a tool plugin's key-value store: one namespace per plugin, kept
// across instances, versions and (with a persistent backend) restarts.
type KV interface {
	Get(ctx context.Context, key string) (value []byte, ok bool, err error)
	Set(ctx context.Context, key string, value []byte) error // nil deletes
}

// Limits of the key-value store, checked before the backend sees a request.
const (
	MaxKVKey   = 512
	MaxKVValue = 1 << 20
)

// ToolCall is what the host functions of one tool call reach: the client
// that made it. Package plugins binds it to the call's context.
type ToolCall interface {
	// Progress sends a ToolProgress (JSON) to the calling client; false
	// when the client asked for none.
	Progress(ctx context.Context, data []byte) (bool, error)
	// Log sends a ToolLog (JSON) to the calling client; false when the
	// client's log level drops it.
	Log(ctx context.Context, data []byte) (bool, error)
}

type toolCallKey struct{}

// WithToolCall returns ctx carrying c for the host functions of the guest
// call made with it.
func WithToolCall(ctx context.Context, c ToolCall) context.Context {
	return context.WithValue(ctx, toolCallKey{}, c)
}

func toolCallOf(ctx context.Context) ToolCall {
	c, _ := ctx.Value(toolCallKey{}).(ToolCall)
	return c
}

// instantiateToolEnv defines the host functions of tool plugins, module
// abi.ToolHostModule (SPEC.md section 14.4). Each traps when its grant is
// off, as http_request does outside allowed_hosts: a refused call is the
// operator's to see, not a value for the guest to guess at.
func instantiateToolEnv(ctx context.Context, r wazero.Runtime) (api.Module, error) {
	const i32, i64 = api.ValueTypeI32, api.ValueTypeI64
	b := r.NewHostModuleBuilder(abi.ToolHostModule)
	def := func(name string, f func(ctx context.Context, k *Kernel, stack []uint64), params, results []api.ValueType) {
		b.NewFunctionBuilder().WithGoFunction(api.GoFunc(func(ctx context.Context, stack []uint64) {
			f(ctx, kernelOf(ctx), stack)
		}), params, results).Export(name)
	}
	def(abi.HostProgress, func(ctx context.Context, k *Kernel, s []uint64) {
		if !k.env.Progress {
			panic(fmt.Errorf("%s is not granted: set progress = true on the tools_plugin", abi.HostProgress))
		}
		s[0] = k.notify(ctx, s[0], ToolCall.Progress)
	}, []api.ValueType{i64}, []api.ValueType{i32})
	def(abi.HostLog, func(ctx context.Context, k *Kernel, s []uint64) {
		if !k.env.ClientLog {
			panic(fmt.Errorf("%s is not granted: set client_log = true on the tools_plugin", abi.HostLog))
		}
		s[0] = k.notify(ctx, s[0], ToolCall.Log)
	}, []api.ValueType{i64}, []api.ValueType{i32})
	def(abi.HostKVGet, func(ctx context.Context, k *Kernel, s []uint64) {
		key := k.kvKey(s[0])
		v, ok, err := k.env.KV.Get(ctx, key)
		if err != nil {
			panic(fmt.Errorf("kv_get %q: %w", key, err))
		}
		if !ok {
			s[0] = 0
			return
		}
		s[0] = k.write(v)
	}, []api.ValueType{i64}, []api.ValueType{i64})
	def(abi.HostKVSet, func(ctx context.Context, k *Kernel, s []uint64) {
		key := k.kvKey(s[0])
		var v []byte
		if s[1] != 0 {
			v = bytes.Clone(k.bytes(s[1]))
			if len(v) > MaxKVValue {
				panic(fmt.Errorf("kv_set %q: a value of %d bytes is over the limit of %d", key, len(v), MaxKVValue))
			}
			if v == nil {
				v = []byte{}
			}
		}
		if err := k.env.KV.Set(ctx, key, v); err != nil {
			panic(fmt.Errorf("kv_set %q: %w", key, err))
		}
	}, []api.ValueType{i64, i64}, []api.ValueType{})
	return b.Instantiate(ctx)
}

func (k *Kernel) kvKey(off uint64) string {
	if k.env.KV == nil {
		panic(fmt.Errorf("the key-value store is not granted: set kv = true on the tools_plugin"))
	}
	key := k.bytes(off)
	if len(key) == 0 || len(key) > MaxKVKey {
		panic(fmt.Errorf("a key-value store key must have 1 to %d bytes, not %d", MaxKVKey, len(key)))
	}
	return string(key)
}

// notify passes the block at off to send: 0 sent, 1 nothing to send to
// (outside a tool call, no progress token, a log level that drops it).
// A malformed message or a failed send traps.
func (k *Kernel) notify(ctx context.Context, off uint64, send func(ToolCall, context.Context, []byte) (bool, error)) uint64 {
	c := toolCallOf(ctx)
	if c == nil {
		return 1
	}
	ok, err := send(c, ctx, bytes.Clone(k.bytes(off)))
	if err != nil {
		panic(err)
	}
	if !ok {
		return 1
	}
	return 0
}

package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// What the guest imports, and nothing else: the host's "mcphost" module
// (guest/glue.c documents its ABI) and four WASI functions that
// wasi-libc's stdio and clock need, implemented here rather than by
// wazero's WASI so that no file, no environment, no argument and no
// randomness beyond QuickJS's own reaches a script: stdio writes are
// swallowed, closing or seeking a descriptor fails, and the clock is the
// host's.

// runKey finds a run's state in the context the host functions get.
type runKey struct{}

// runState is one run's side of the host functions.
type runState struct {
	call     CallFunc
	maxCalls int
	calls    int
	answer   []byte // call_tool's answer, until take_answer copies it
	status   int32  // done's status
	report   []byte // done's text
}

// answer is what call_tool answers the guest (the prelude decodes it):
// the tools/call result, or the text of an error the script gets as an
// exception.
type answer struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// WASI errno values the stubs return.
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoFault   = 21
	errnoInval   = 28
)

func instantiateHost(ctx context.Context, rt wazero.Runtime) error {
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	_, err := rt.NewHostModuleBuilder("mcphost").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(callTool), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).Export("call_tool").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(takeAnswer), []api.ValueType{i32, i32}, nil).Export("take_answer").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(done), []api.ValueType{i32, i32, i32}, nil).Export("done").
		Instantiate(ctx)
	if err != nil {
		return err
	}
	_, err = rt.NewHostModuleBuilder("wasi_snapshot_preview1").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(clockTimeGet), []api.ValueType{i32, i64, i32}, []api.ValueType{i32}).Export("clock_time_get").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(fdWrite), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).Export("fd_write").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(fdClose), []api.ValueType{i32}, []api.ValueType{i32}).Export("fd_close").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(fdSeek), []api.ValueType{i32, i64, i32, i32}, []api.ValueType{i32}).Export("fd_seek").
		Instantiate(ctx)
	return err
}

// callTool is call_tool(name, name_len, args, args_len) -> answer_len.
func callTool(ctx context.Context, m api.Module, stack []uint64) {
	st, _ := ctx.Value(runKey{}).(*runState)
	name, ok1 := m.Memory().Read(uint32(stack[0]), uint32(stack[1]))
	args, ok2 := m.Memory().Read(uint32(stack[2]), uint32(stack[3]))
	if st == nil || !ok1 || !ok2 || ctx.Err() != nil {
		stack[0] = api.EncodeI32(-1)
		return
	}
	var a answer
	switch {
	case string(name) == ToolName:
		a.Error = ToolName + " cannot call itself"
	case st.call == nil:
		a.Error = "this run has no tools"
	case st.calls >= st.maxCalls:
		a.Error = fmt.Sprintf("too many tool calls: a script may make %d", st.maxCalls)
	default:
		st.calls++
		// Copies: the guest's memory may move when it grows.
		res, err := st.call(ctx, string(name), json.RawMessage(append([]byte(nil), args...)))
		if err != nil {
			a.Error = err.Error()
		} else {
			a.Result = res
		}
	}
	b, err := json.Marshal(a)
	if err != nil {
		b, _ = json.Marshal(answer{Error: "the tool's result is not valid JSON: " + err.Error()})
	}
	st.answer = b
	stack[0] = api.EncodeI32(int32(len(b)))
}

// takeAnswer is take_answer(buf, len).
func takeAnswer(ctx context.Context, m api.Module, stack []uint64) {
	st, _ := ctx.Value(runKey{}).(*runState)
	if st == nil {
		return
	}
	b := st.answer
	if n := int(uint32(stack[1])); n < len(b) {
		b = b[:n]
	}
	m.Memory().Write(uint32(stack[0]), b)
	st.answer = nil
}

// done is done(status, buf, len).
func done(ctx context.Context, m api.Module, stack []uint64) {
	st, _ := ctx.Value(runKey{}).(*runState)
	if st == nil {
		return
	}
	b, ok := m.Memory().Read(uint32(stack[1]), uint32(stack[2]))
	if !ok {
		st.status, st.report = 1, []byte("the script's report was out of bounds")
		return
	}
	st.status, st.report = api.DecodeI32(stack[0]), append([]byte(nil), b...)
}

// epoch is where the monotonic clocks the guest reads start.
var epoch = time.Now()

// clockTimeGet is WASI's clock_time_get(id, precision, result_ptr): the
// host's wall clock for the realtime clock (0), its monotonic clock for
// the others.
func clockTimeGet(ctx context.Context, m api.Module, stack []uint64) {
	var t uint64
	switch uint32(stack[0]) {
	case 0:
		t = uint64(time.Now().UnixNano())
	case 1, 2, 3:
		t = uint64(time.Since(epoch))
	default:
		stack[0] = errnoInval
		return
	}
	if !m.Memory().WriteUint64Le(uint32(stack[2]), t) {
		stack[0] = errnoFault
		return
	}
	stack[0] = errnoSuccess
}

// fdWrite is WASI's fd_write(fd, iovs, iovs_len, nwritten_ptr): every
// byte is taken and dropped, so that stdio never retries.
func fdWrite(ctx context.Context, m api.Module, stack []uint64) {
	iovs, n := uint32(stack[1]), uint32(stack[2])
	var total uint32
	for i := uint32(0); i < n; i++ {
		l, ok := m.Memory().ReadUint32Le(iovs + i*8 + 4)
		if !ok {
			stack[0] = errnoFault
			return
		}
		total += l
	}
	if !m.Memory().WriteUint32Le(uint32(stack[3]), total) {
		stack[0] = errnoFault
		return
	}
	stack[0] = errnoSuccess
}

// fdClose and fdSeek fail: the guest has no descriptors.
func fdClose(ctx context.Context, m api.Module, stack []uint64) { stack[0] = errnoBadf }
func fdSeek(ctx context.Context, m api.Module, stack []uint64)  { stack[0] = errnoBadf }

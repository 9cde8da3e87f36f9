package extismhost

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/mcphost-project/mcphost/plugins/internal/rootfs"
	"github.com/mcphost-project/mcphost/plugins/internal/wasmrewrite"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Kernel is the host side of the Extism memory model for one instance: the
// blocks a guest allocates with alloc, addressed by non-zero offsets, which
// hold the input, the output, the error message, config and var values and
// log messages. Extism keeps them in a separate wasm memory managed by its
// kernel module; here they live in a Go byte slice, capped like the guest's
// own memory at the spec's limit. Offsets are indexes into the slice, so a
// guest can only reach its own kernel memory. An instance serves one call
// at a time, so a kernel needs no lock.
type Kernel struct {
	env    *Env
	budget Budget

	mem    []byte            // readable up to len(mem); offsets below kernelBase are never allocated
	top    uint64            // where the next new block goes; <= len(mem)
	blocks map[uint64]block  // live blocks by offset
	free   []freeBlock       // freed blocks below top, for reuse
	vars   map[string][]byte // var_set values, kept across calls

	inOff, inLen   uint64
	outOff, outLen uint64
	errOff         uint64

	callContext                   // the call's, for http_request and nanosleep
	files       *rootfs.OpenFiles // the instance's count of open files, for path_open
	status      int               // the last http_request's status code
	headers     map[string]string // and its headers; nil before one
}

type block struct{ used, cap uint64 }

type freeBlock struct{ off, cap uint64 }

const (
	kernelBase    = 8        // the first offset handed out
	kernelShrink  = 4 << 20  // reset drops an arena larger than this
	maxFreeBlocks = 256      // freed blocks remembered for reuse (the rest wait for reset)
	maxVarBytes   = 1 << 20  // as the go-sdk's default
	maxHTTPBytes  = 50 << 20 // as the go-sdk's default
)

// errKernelMemory is the trap of an alloc that would take the kernel's
// memory past the cap.
var errKernelMemory = errors.New("extism memory limit reached")

type kernelKey struct{}

// NewKernel returns the kernel of one instance of the plugin env describes.
// Its allocations count against budget, which the instance's linear memory
// shares; files is the instance's count of open files (nil without
// allowed_paths).
func NewKernel(env *Env, budget Budget, files *rootfs.OpenFiles) *Kernel {
	k := &Kernel{env: env, budget: budget, files: files, blocks: map[uint64]block{}, vars: map[string][]byte{}}
	k.reset()
	return k
}

// SetEnv makes k read env from its next host call on: the configuration,
// logger and grants of another plugin that shares the instance (a group of
// built-ins, package plugins' fused.go). Call it between calls only.
func (k *Kernel) SetEnv(env *Env) { k.env = env }

// WithKernel returns ctx carrying k, through which the host functions find
// the calling instance's kernel.
func WithKernel(ctx context.Context, k *Kernel) context.Context {
	return context.WithValue(ctx, kernelKey{}, k)
}

// Begin readies k for one call of the guest: frees every block, writes the
// input and binds ctx (returned carrying k) for the host functions that
// need the call's context. End unbinds it.
func (k *Kernel) Begin(ctx context.Context, input []byte) (context.Context, error) {
	k.reset()
	if err := k.setInput(input); err != nil {
		return ctx, err
	}
	ctx = WithKernel(ctx, k)
	k.ctx = ctx
	return ctx, nil
}

// End forgets the call's context.
func (k *Kernel) End() { k.ctx = nil }

// reset frees every block, as Extism's kernel does before each call.
func (k *Kernel) reset() {
	if cap(k.mem) > kernelShrink || cap(k.mem) < kernelBase {
		k.mem = make([]byte, kernelBase, 4096)
	}
	k.mem = k.mem[:kernelBase]
	k.top = kernelBase
	clear(k.blocks)
	k.free = k.free[:0]
	k.inOff, k.inLen, k.outOff, k.outLen, k.errOff = 0, 0, 0, 0, 0
	k.status, k.headers = 0, nil // one caller's response is not the next one's
}

// alloc returns the offset of a new block of n bytes; 0 for n == 0.
func (k *Kernel) alloc(n uint64) uint64 {
	if n == 0 {
		return 0
	}
	c := (n + 7) &^ 7
	if c < n {
		panic(errKernelMemory)
	}
	for i, f := range k.free {
		if f.cap >= c {
			k.free[i] = k.free[len(k.free)-1]
			k.free = k.free[:len(k.free)-1]
			k.blocks[f.off] = block{used: n, cap: f.cap}
			return f.off
		}
	}
	off := k.top
	end := off + c
	limit := k.budget.Limit()
	if end < off || end > limit {
		k.budget.Refuse()
		panic(errKernelMemory)
	}
	switch {
	case end > uint64(cap(k.mem)):
		newCap := min(max(end, 2*uint64(cap(k.mem))), max(limit, end))
		mem := make([]byte, end, newCap)
		copy(mem, k.mem)
		k.mem = mem
	case end > uint64(len(k.mem)):
		k.mem = k.mem[:end]
	}
	clear(k.mem[off:end]) // fresh blocks read as zeros
	k.top = end
	k.blocks[off] = block{used: n, cap: c}
	return off
}

func (k *Kernel) freeBlock(off uint64) {
	b, ok := k.blocks[off]
	if !ok {
		return
	}
	delete(k.blocks, off)
	// The bytes stay readable until the block is reused or the call ends,
	// as in Extism's kernel: go-pdk reads an HTTP response after freeing
	// the request block the response may have reused.
	if off+b.cap == k.top {
		k.top = off
		return
	}
	if len(k.free) < maxFreeBlocks {
		k.free = append(k.free, freeBlock{off: off, cap: b.cap})
	}
}

// length is the length of the live block at off, 0 if there is none.
func (k *Kernel) length(off uint64) uint64 {
	return k.blocks[off].used
}

// bytes returns the live block at off, nil if there is none. The slice is
// the kernel's memory: copy what you keep.
func (k *Kernel) bytes(off uint64) []byte {
	b, ok := k.blocks[off]
	if !ok {
		return nil
	}
	return k.mem[off : off+b.used]
}

func (k *Kernel) write(data []byte) uint64 {
	off := k.alloc(uint64(len(data)))
	copy(k.mem[off:], data)
	return off
}

// span checks that [off, off+n) is inside the kernel's memory.
func (k *Kernel) span(off, n uint64) []byte {
	if top := uint64(len(k.mem)); off > top || n > top-off {
		panic(fmt.Errorf("extism memory access out of bounds: offset %d, %d bytes, memory %d bytes", off, n, top))
	}
	return k.mem[off : off+n]
}

func (k *Kernel) setInput(input []byte) error {
	if len(input) == 0 {
		return nil
	}
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("input of %d bytes: %v", len(input), r)
			}
		}()
		k.inOff = k.write(input)
		k.inLen = uint64(len(input))
	}()
	return err
}

// Output returns a copy of the output the guest set.
func (k *Kernel) Output() []byte {
	if top := uint64(len(k.mem)); k.outLen == 0 || k.outOff > top || k.outLen > top-k.outOff {
		return []byte{}
	}
	return bytes.Clone(k.mem[k.outOff : k.outOff+k.outLen])
}

// ErrorMessage is the message the guest set with error_set, "" for none.
func (k *Kernel) ErrorMessage() string {
	if k.errOff == 0 {
		return ""
	}
	return string(k.bytes(k.errOff))
}

func (k *Kernel) log(level hclog.Level, extismLevel int32, off uint64) {
	if extismLevel >= k.env.LogLevel && k.env.Log != nil {
		k.env.Log.Log(level, string(k.bytes(off)))
	}
	k.freeBlock(off)
}

// kernelOf returns the kernel of the calling instance.
func kernelOf(ctx context.Context) *Kernel {
	k, ok := ctx.Value(kernelKey{}).(*Kernel)
	if !ok {
		panic("extism host function called outside a plugin call")
	}
	return k
}

// instantiateExtismEnv defines the Extism host functions, module
// extism:host/env, with the signatures and semantics of the go-sdk v1.7.1.
func instantiateExtismEnv(ctx context.Context, r wazero.Runtime) (api.Module, error) {
	const i32, i64 = api.ValueTypeI32, api.ValueTypeI64
	b := r.NewHostModuleBuilder(ModuleName)
	def := func(name string, f func(k *Kernel, stack []uint64), params, results []api.ValueType) {
		b.NewFunctionBuilder().WithGoFunction(api.GoFunc(func(ctx context.Context, stack []uint64) {
			f(kernelOf(ctx), stack)
		}), params, results).Export(name)
	}
	none := []api.ValueType{}
	def("alloc", func(k *Kernel, s []uint64) { s[0] = k.alloc(s[0]) }, []api.ValueType{i64}, []api.ValueType{i64})
	def("free", func(k *Kernel, s []uint64) { k.freeBlock(s[0]) }, []api.ValueType{i64}, none)
	// length doubles as the loop check of instrumented guests
	// (internal/wasmrewrite): the argument wasmrewrite.LoopCheckArg, never a block offset,
	// asks whether the call may go on.
	for _, name := range []string{"length", "length_unsafe"} {
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, s []uint64) {
			if s[0] == wasmrewrite.LoopCheckArg {
				stopIfDone(ctx, mod)
				s[0] = 0
				return
			}
			s[0] = kernelOf(ctx).length(s[0])
		}), []api.ValueType{i64}, []api.ValueType{i64}).Export(name)
	}
	def("load_u8", func(k *Kernel, s []uint64) { s[0] = uint64(k.span(s[0], 1)[0]) }, []api.ValueType{i64}, []api.ValueType{i32})
	def("load_u64", func(k *Kernel, s []uint64) { s[0] = binary.LittleEndian.Uint64(k.span(s[0], 8)) }, []api.ValueType{i64}, []api.ValueType{i64})
	def("store_u8", func(k *Kernel, s []uint64) { k.span(s[0], 1)[0] = byte(s[1]) }, []api.ValueType{i64, i32}, none)
	def("store_u64", func(k *Kernel, s []uint64) { binary.LittleEndian.PutUint64(k.span(s[0], 8), s[1]) }, []api.ValueType{i64, i64}, none)
	def("input_load_u8", func(k *Kernel, s []uint64) { s[0] = uint64(k.span(k.inOff+s[0], 1)[0]) }, []api.ValueType{i64}, []api.ValueType{i32})
	def("input_load_u64", func(k *Kernel, s []uint64) {
		s[0] = binary.LittleEndian.Uint64(k.span(k.inOff+s[0], 8))
	}, []api.ValueType{i64}, []api.ValueType{i64})
	def("input_set", func(k *Kernel, s []uint64) { k.inOff, k.inLen = s[0], s[1] }, []api.ValueType{i64, i64}, none)
	def("output_set", func(k *Kernel, s []uint64) { k.outOff, k.outLen = s[0], s[1] }, []api.ValueType{i64, i64}, none)
	def("input_length", func(k *Kernel, s []uint64) { s[0] = k.inLen }, none, []api.ValueType{i64})
	def("input_offset", func(k *Kernel, s []uint64) { s[0] = k.inOff }, none, []api.ValueType{i64})
	def("output_length", func(k *Kernel, s []uint64) { s[0] = k.outLen }, none, []api.ValueType{i64})
	def("output_offset", func(k *Kernel, s []uint64) { s[0] = k.outOff }, none, []api.ValueType{i64})
	def("reset", func(k *Kernel, s []uint64) { k.reset() }, none, none)
	def("error_set", func(k *Kernel, s []uint64) { k.errOff = s[0] }, []api.ValueType{i64}, none)
	def("error_get", func(k *Kernel, s []uint64) { s[0] = k.errOff }, none, []api.ValueType{i64})
	def("memory_bytes", func(k *Kernel, s []uint64) { s[0] = uint64(len(k.mem)) }, none, []api.ValueType{i64})

	def("config_get", func(k *Kernel, s []uint64) {
		v, ok := k.env.Config[string(k.bytes(s[0]))]
		if !ok {
			s[0] = 0
			return
		}
		s[0] = k.write([]byte(v))
	}, []api.ValueType{i64}, []api.ValueType{i64})
	def("var_get", func(k *Kernel, s []uint64) {
		name := string(k.bytes(s[0]))
		k.freeBlock(s[0])
		v, ok := k.vars[name]
		if !ok {
			s[0] = 0
			return
		}
		s[0] = k.write(v)
	}, []api.ValueType{i64}, []api.ValueType{i64})
	def("var_set", func(k *Kernel, s []uint64) {
		name := string(k.bytes(s[0]))
		k.freeBlock(s[0])
		if s[1] == 0 {
			delete(k.vars, name)
			return
		}
		v := bytes.Clone(k.bytes(s[1]))
		k.freeBlock(s[1])
		const entry = 40 // the go-sdk's estimate of a map entry's overhead
		size := entry + len(name) + len(v)
		for n, old := range k.vars {
			size += entry + len(n) + len(old)
		}
		if size >= maxVarBytes {
			panic("Variable store is full")
		}
		k.vars[name] = v
	}, []api.ValueType{i64, i64}, none)

	def("http_request", func(k *Kernel, s []uint64) { s[0] = k.httpRequest(s[0], s[1]) }, []api.ValueType{i64, i64}, []api.ValueType{i64})
	def("http_status_code", func(k *Kernel, s []uint64) { s[0] = uint64(uint32(int32(k.status))) }, none, []api.ValueType{i32})
	def("http_headers", func(k *Kernel, s []uint64) { s[0] = k.httpHeaders() }, none, []api.ValueType{i64})
	def("get_log_level", func(k *Kernel, s []uint64) { s[0] = uint64(uint32(k.env.LogLevel)) }, none, []api.ValueType{i32})
	for i, l := range []struct {
		name  string
		level hclog.Level
	}{{"log_trace", hclog.Trace}, {"log_debug", hclog.Debug}, {"log_info", hclog.Info}, {"log_warn", hclog.Warn}, {"log_error", hclog.Error}} {
		def(l.name, func(k *Kernel, s []uint64) { k.log(l.level, int32(i), s[0]) }, []api.ValueType{i64}, none)
	}
	return b.Instantiate(ctx)
}

// httpRequest performs an Extism http_request to the spec's allowed hosts,
// as the go-sdk does, with the limits of http.go: every redirect is
// checked against allowed_hosts, every dialled address against the
// address rules, and sizes and time are bounded.
//
// A refused or failed request traps the guest, as in Extism, unless the
// request asks for its errors ("returnErrors": true, ABI 1.5): then it
// returns a block holding the reason, with status code 0 and no headers,
// so the guest can return the failure to its caller as an error of its
// own rather than lose its instance (and, repeated, have its caller put
// in the crash-loop backoff). A call whose context is done stops the
// guest either way.
//
// Unlike the go-sdk it leaves the request and body blocks to the guest,
// which frees them (go-pdk does): freeing them here let the response
// reuse the request's block, which the guest then freed under it.
func (k *Kernel) httpRequest(reqOff, bodyOff uint64) uint64 {
	k.status, k.headers = 0, nil
	var req struct {
		Url          string
		Headers      map[string]string
		Method       string
		ReturnErrors bool `json:"returnErrors"`
	}
	if err := json.Unmarshal(k.bytes(reqOff), &req); err != nil {
		panic(fmt.Errorf("invalid http request: %v", err))
	}
	data, err := k.send(req.Url, req.Method, req.Headers, bodyOff)
	if err != nil {
		if !req.ReturnErrors || (k.ctx != nil && k.ctx.Err() != nil) {
			panic(err)
		}
		k.status, k.headers = 0, nil
		return k.write([]byte(err.Error()))
	}
	if len(data) == 0 {
		return 0
	}
	return k.write(data)
}

// send performs one http_request and returns the response body, having
// set k.status and k.headers; or why it was refused or failed.
func (k *Kernel) send(rawURL, method string, headers map[string]string, bodyOff uint64) ([]byte, error) {
	if method == "" {
		method = "GET"
	}
	method = strings.ToUpper(method)
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("invalid url: %v", err)
	}
	if err := k.env.HTTP.grantsOrNone().allowURL(u); err != nil {
		return nil, err
	}
	var body io.Reader
	if bodyOff != 0 {
		b := k.bytes(bodyOff)
		if len(b) > maxHTTPBytes {
			return nil, fmt.Errorf("HTTP request body of %d bytes is over the limit of %d", len(b), maxHTTPBytes)
		}
		body = bytes.NewReader(bytes.Clone(b))
	}
	ctx := k.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, maxHTTPTime)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	for key, v := range headers {
		hreq.Header.Set(key, v)
	}
	resp, err := k.env.HTTP.client().Do(hreq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxHTTPBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxHTTPBytes {
		return nil, fmt.Errorf("HTTP response body from %q is over the limit of %d bytes", u.Redacted(), maxHTTPBytes)
	}
	k.status = resp.StatusCode
	k.headers = make(map[string]string, len(resp.Header))
	for name, v := range resp.Header {
		k.headers[strings.ToLower(name)] = strings.Join(v, ",")
	}
	return data, nil
}

// httpHeaders returns the last response's headers as a JSON object of
// lowercased names (values of repeated headers joined by ","), as the
// go-sdk does with response headers enabled; 0 before any response.
func (k *Kernel) httpHeaders() uint64 {
	if k.headers == nil {
		return 0
	}
	b, err := json.Marshal(k.headers)
	if err != nil {
		panic(err)
	}
	return k.write(b)
}

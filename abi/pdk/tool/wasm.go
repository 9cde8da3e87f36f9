//go:build wasip1

package tool

import (
	"encoding/json"
	"errors"

	extism "github.com/extism/go-pdk"
	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
)

var registered *Guest

// Register makes p the plugin: its tools, and its policy hooks if any.
// Call it once, from an init function of the main package. A problem with
// p is every export's error, so the host refuses the plugin at load.
func Register(p Plugin) {
	pol := p.Policy
	pol.Name, pol.Version, pol.ServesTools = p.Name, p.Version, true
	pdk.Register(pol)
	if registered != nil {
		registered = &Guest{err: errors.New("tool: Register called more than once")}
		return
	}
	registered = NewGuest(p)
}

func guest() *Guest {
	if registered == nil {
		return &Guest{err: errors.New("tool: no plugin registered (call tool.Register from an init function)")}
	}
	return registered
}

//go:wasmexport mcphost_tools
func exportTools() int32 {
	out, err := guest().Tools()
	return finish(out, err)
}

//go:wasmexport mcphost_tool_invoke
func exportToolInvoke() int32 {
	c := &Context{progress: sendProgress, log: sendLog}
	out, err := guest().Invoke(extism.Input(), c)
	return finish(out, err)
}

func finish(out []byte, err error) int32 {
	if err != nil {
		extism.SetError(err)
		return 1
	}
	extism.Output(out)
	return 0
}

//go:wasmimport mcphost:tools progress
func hostProgress(off uint64) int32

//go:wasmimport mcphost:tools log
func hostLog(off uint64) int32

//go:wasmimport mcphost:tools kv_get
func hostKVGet(key uint64) uint64

//go:wasmimport mcphost:tools kv_set
func hostKVSet(key, value uint64)

func sendProgress(p abi.ToolProgress) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	mem := extism.AllocateBytes(b)
	defer mem.Free()
	hostProgress(mem.Offset())
	return nil
}

func sendLog(l abi.ToolLog) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	mem := extism.AllocateBytes(b)
	defer mem.Free()
	hostLog(mem.Offset())
	return nil
}

// KVGet reads key from the plugin's key-value store (grant kv = true).
func KVGet(key string) ([]byte, bool) {
	k := extism.AllocateString(key)
	defer k.Free()
	off := hostKVGet(k.Offset())
	if off == 0 {
		return nil, false
	}
	mem := extism.FindMemory(off)
	defer mem.Free()
	return mem.ReadBytes(), true
}

// KVSet writes key in the plugin's key-value store (grant kv = true);
// values are at most 1 MiB.
func KVSet(key string, value []byte) {
	k := extism.AllocateString(key)
	defer k.Free()
	if value == nil {
		value = []byte{}
	}
	v := extism.AllocateBytes(value)
	defer v.Free()
	hostKVSet(k.Offset(), v.Offset())
}

// KVDelete removes key from the plugin's key-value store.
func KVDelete(key string) {
	k := extism.AllocateString(key)
	defer k.Free()
	hostKVSet(k.Offset(), 0)
}

//go:wasmimport extism:host/env http_request
func hostHTTPRequest(req, body uint64) uint64

//go:wasmimport extism:host/env http_status_code
func hostHTTPStatusCode() int32

// httpRequest is the request block of http_request (SPEC.md section
// 10.3), asking for its errors (ABI 1.5).
type httpRequest struct {
	URL          string            `json:"url"`
	Method       string            `json:"method"`
	Headers      map[string]string `json:"headers,omitempty"`
	ReturnErrors bool              `json:"returnErrors"`
}

// HTTPGet fetches url through the host (grant allowed_hosts) and returns
// the status code and body. A request the host refuses (a URL outside
// allowed_hosts: "refused by allowed_hosts: ...") or that fails (no
// connection, too large a body) is an error, which a tool returns to its
// caller; a host older than ABI 1.5 traps the guest instead.
func HTTPGet(url string, headers map[string]string) (int, []byte, error) {
	enc, err := json.Marshal(httpRequest{URL: url, Method: "GET", Headers: headers, ReturnErrors: true})
	if err != nil {
		return 0, nil, err
	}
	req := extism.AllocateBytes(enc)
	defer req.Free()
	off := hostHTTPRequest(req.Offset(), 0)
	status := int(hostHTTPStatusCode())
	var body []byte
	if off != 0 {
		mem := extism.FindMemory(off)
		body = mem.ReadBytes()
		mem.Free()
	}
	if status == 0 {
		if len(body) == 0 {
			return 0, nil, errors.New("tool: http_request to " + url + " failed")
		}
		return 0, nil, errors.New(string(body))
	}
	return status, body, nil
}

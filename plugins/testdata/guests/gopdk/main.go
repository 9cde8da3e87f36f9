//go:build wasip1

// Command gopdk is a compatibility guest: a policy written only with the
// official Extism go-pdk helpers (HTTP, config, vars, log), which must run
// on mcphost's kernel exactly as on Extism's own runtime. Its tool_call
// hook answers with a JSON report of what each helper returned.
package main

import (
	"encoding/json"
	"strconv"

	pdk "github.com/extism/go-pdk"
	"github.com/mcphost-project/mcphost/abi"
)

func main() {}

//go:wasmexport mcphost_describe
func describe() int32 {
	return output(abi.Describe{ABI: abi.Version, Name: "gopdk", Version: "1", Hooks: []string{abi.HookToolCall}})
}

// Report is what tool_call answers with, as the text of its result.
type Report struct {
	Config     string            `json:"config"`
	ConfigOK   bool              `json:"config_ok"`
	Missing    bool              `json:"missing_ok"`
	Calls      int               `json:"calls"`
	VarInt     int               `json:"var_int"`
	Removed    bool              `json:"removed"`
	GetStatus  uint16            `json:"get_status"`
	GetBody    string            `json:"get_body"`
	GetHeaders map[string]string `json:"get_headers"`
	PostStatus uint16            `json:"post_status"`
	PostBody   string            `json:"post_body"`
	Empty      int               `json:"empty_len"`
}

//go:wasmexport mcphost_tool_call
func toolCall() int32 {
	var r Report
	r.Config, r.ConfigOK = pdk.GetConfig("greeting")
	_, found := pdk.GetConfig("no such key")
	r.Missing = !found

	// Vars persist across calls of one instance.
	n := 0
	if b := pdk.GetVar("calls"); b != nil {
		n, _ = strconv.Atoi(string(b))
	}
	n++
	pdk.SetVar("calls", []byte(strconv.Itoa(n)))
	r.Calls = n
	pdk.SetVarInt("int", 42)
	r.VarInt = pdk.GetVarInt("int")
	pdk.SetVar("gone", []byte("x"))
	pdk.RemoveVar("gone")
	r.Removed = pdk.GetVar("gone") == nil

	pdk.Log(pdk.LogInfo, "gopdk guest: calling "+config("url"))

	get := pdk.NewHTTPRequest(pdk.MethodGet, config("url")+"/hello")
	get.SetHeader("X-Guest", "gopdk")
	resp := get.Send()
	r.GetStatus = resp.Status()
	r.GetBody = string(resp.Body())
	r.GetHeaders = resp.Headers()

	post := pdk.NewHTTPRequest(pdk.MethodPost, config("url")+"/echo")
	post.SetBody([]byte("posted body"))
	presp := post.Send()
	r.PostStatus = presp.Status()
	r.PostBody = string(presp.Body())

	empty := pdk.NewHTTPRequest(pdk.MethodGet, config("url")+"/empty").Send()
	r.Empty = len(empty.Body())

	b, _ := json.Marshal(r)
	return output(abi.CallDecision{Action: abi.ActionRespond, Result: &abi.CallToolResult{
		Content: []abi.Content{{Type: "text", Text: string(b)}}}})
}

func config(key string) string {
	v, _ := pdk.GetConfig(key)
	return v
}

func output(v any) int32 {
	if err := pdk.OutputJSON(v); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

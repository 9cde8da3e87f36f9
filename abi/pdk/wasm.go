//go:build wasip1

package pdk

import (
	"errors"
	"fmt"

	extism "github.com/extism/go-pdk"
	"github.com/mcphost-project/mcphost/abi"
)

var (
	registered  *Guest
	registerErr error
	// selectGuest, when set (RegisterSelect), chooses the Guest of each
	// export call instead of registered.
	selectGuest func() (*Guest, error)
)

// Register makes p the plugin's policy. Call it once, from an init function
// of the main package. A policy that fails Validate, or a second call, is
// not fatal here: every export then returns the error as a plugin error, so
// the host refuses the plugin at load time with that message.
//
// Read configuration in p.Configure (or in the handlers), not in init: the
// host guarantees it only during export calls.
func Register(p Policy) {
	switch {
	case registerErr != nil:
		return
	case registered != nil || selectGuest != nil:
		registerErr = errors.New("pdk: Register called more than once")
		return
	}
	if err := p.Validate(); err != nil {
		registerErr = err
		return
	}
	registered = NewGuest(p, Config)
}

// RegisterSelect makes sel choose, at every export call, the Guest that
// answers it, so that one instance can hold several configured policies.
// It is for mcphost's built-in module, whose host gives each policy of a
// group its own configuration and picks it per call (the key
// "mcphost.builtin.slot"); a plugin of its own needs Register only. Call it
// once, from an init function, instead of Register.
func RegisterSelect(sel func() (*Guest, error)) {
	switch {
	case registerErr != nil:
		return
	case registered != nil || selectGuest != nil:
		registerErr = errors.New("pdk: Register or RegisterSelect called more than once")
		return
	}
	selectGuest = sel
}

// Config returns the value of key in the plugin's configuration. Note that
// Extism does not tell an empty value from a missing one: both report false.
func Config(key string) (string, bool) {
	return extism.GetConfig(key)
}

// ConfigJSON decodes the JSON-encoded configuration value of key into v and
// reports whether key was set; see ConfigSource.JSON.
func ConfigJSON(key string, v any) (bool, error) {
	return ConfigSource(Config).JSON(key, v)
}

// Log writes msg to the host log at level; the host files it under the
// plugin's name. Messages below the host's log level cost one host call.
func Log(level Level, msg string) {
	if int32(level) < getLogLevel() {
		return
	}
	extism.Log(extism.LogLevel(level), msg)
}

// Logf is Log with a formatted message.
func Logf(level Level, format string, args ...any) {
	if int32(level) < getLogLevel() {
		return
	}
	extism.Log(extism.LogLevel(level), fmt.Sprintf(format, args...))
}

// getLogLevel returns the lowest level the host logs.
//
//go:wasmimport extism:host/env get_log_level
func getLogLevel() int32

// run is the body of every export: it feeds the Extism input to the
// registered policy and sets the Extism output, or the Extism error and a
// non-zero return.
func run(export string) int32 {
	var out []byte
	var err error
	switch {
	case registerErr != nil:
		err = registerErr
	case selectGuest != nil:
		var g *Guest
		if g, err = selectGuest(); err == nil {
			out, err = g.Call(export, extism.Input())
		}
	case registered == nil:
		err = errors.New("pdk: no policy registered; call pdk.Register from an init function of package main")
	default:
		out, err = registered.Call(export, extism.Input())
	}
	if err != nil {
		extism.SetError(err)
		return 1
	}
	extism.Output(out)
	return 0
}

//go:wasmexport mcphost_describe
func exportDescribe() int32 { return run(abi.ExportDescribe) }

//go:wasmexport mcphost_tools_list
func exportToolsList() int32 { return run(abi.ExportToolsList) }

//go:wasmexport mcphost_tool_call
func exportToolCall() int32 { return run(abi.ExportToolCall) }

//go:wasmexport mcphost_tool_result
func exportToolResult() int32 { return run(abi.ExportToolResult) }

//go:wasmexport mcphost_list
func exportList() int32 { return run(abi.ExportList) }

//go:wasmexport mcphost_request
func exportRequest() int32 { return run(abi.ExportRequest) }

//go:wasmexport mcphost_message
func exportMessage() int32 { return run(abi.ExportMessage) }

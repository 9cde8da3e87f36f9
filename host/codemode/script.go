package codemode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// prelude is the JavaScript evaluated before every script ("prelude.js"):
// it takes the host's call function off the global object and builds,
// from it, what a script sees:
//
//	tools.NAME(args)     the tool's value: its structuredContent, else
//	                     its text (parsed when it is JSON); an error
//	                     result throws a ToolError with its text
//	callTool(name, args) the whole CallToolResult, errors included
//	console.log(...)     lines that come back with the script's value
//
// It also settles the script's promise into what __mcphost_report
// returns to the host (decodeReport).
const prelude = `"use strict";
(() => {
const call = globalThis.__mcphost_call;
delete globalThis.__mcphost_call;
const names = %s;
const maxLog = %d;
const logs = [];
let logBytes = 0, truncated = false;
function show(v) {
  if (typeof v === "string") return v;
  try { const s = JSON.stringify(v); if (s !== undefined) return s; } catch (e) {}
  return String(v);
}
function log(...args) {
  const line = args.map(show).join(" ");
  if (truncated || logBytes + line.length > maxLog) { truncated = true; return; }
  logBytes += line.length;
  logs.push(line);
}
class ToolError extends Error {
  constructor(message, result) { super(message); this.name = "ToolError"; this.result = result; }
}
function callTool(name, args) {
  const a = JSON.parse(call(String(name), JSON.stringify(args === undefined ? {} : args)));
  if (a.error !== undefined) throw new ToolError(a.error);
  return a.result;
}
function valueOf(name, res) {
  const texts = (res.content || []).filter((c) => c.type === "text").map((c) => c.text);
  if (res.isError) throw new ToolError(texts.join("\n") || "tool " + name + " failed", res);
  if (res.structuredContent !== undefined) return res.structuredContent;
  const t = texts.join("\n");
  try { return JSON.parse(t); } catch (e) { return t; }
}
const tools = Object.create(null);
for (const n of names) tools[n] = (args) => valueOf(n, callTool(n, args));
Object.freeze(tools);
const fixed = (name, value) => Object.defineProperty(globalThis, name, { value, writable: false, configurable: false });
fixed("tools", tools);
fixed("callTool", callTool);
fixed("ToolError", ToolError);
globalThis.console = { log, info: log, warn: log, error: log, debug: log };
let outcome;
function describe(e) {
  if (e instanceof Error) {
    const stack = String(e.stack || "").split("\n");
    const shown = stack.slice(0, 8).join("\n") + (stack.length > 9 ? "\n    ... (" + (stack.length - 9) + " more frames)\n" : "");
    return e.name + ": " + e.message + (shown ? "\n" + shown : "");
  }
  return "uncaught " + show(e);
}
fixed("__mcphost_settle", (p) => {
  p.then((v) => { outcome = { value: v === undefined ? null : v }; }, (e) => { outcome = { error: describe(e) }; });
});
fixed("__mcphost_report", () => {
  let o = outcome || { error: "the script did not finish: it awaits something that never settles (tool calls are synchronous; there are no timers)" };
  try {
    return JSON.stringify({ value: o.value, error: o.error, logs, truncated });
  } catch (e) {
    return JSON.stringify({ error: "the script's value cannot be encoded as JSON: " + e.message, logs, truncated });
  }
});
})();
`

// buildPrelude fills the prelude in for tools and a log bound.
func buildPrelude(tools []string, maxLog int) (string, error) {
	if tools == nil {
		tools = []string{} // null is not iterable
	}
	names, err := json.Marshal(tools)
	if err != nil {
		return "", fmt.Errorf("codemode: tool names: %w", err)
	}
	return fmt.Sprintf(prelude, names, maxLog), nil
}

// wrapScript makes the script the body of an async function, on the
// same first line so that the line numbers of its errors are its own.
func wrapScript(script string) string {
	return "__mcphost_settle((async () => {" + script + "\n})());"
}

// report is what __mcphost_report returns. It comes from the guest, where
// a script may have replaced anything: decodeReport trusts none of it.
type report struct {
	Value     json.RawMessage `json:"value"`
	Error     *string         `json:"error"`
	Logs      []string        `json:"logs"`
	Truncated bool            `json:"truncated"`
}

// maxErrText bounds the text of a script's failure.
const maxErrText = 8 << 10

// decodeReport fills o from the guest's report, held to maxOutput bytes.
func (o *Outcome) decodeReport(b []byte, maxOutput int) error {
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("the script's report could not be read: %v", err)
	}
	o.Logs, o.Truncated = r.Logs, r.Truncated
	if r.Error != nil {
		o.Err = limitText(*r.Error, min(maxOutput, maxErrText))
		if o.Err == "" {
			o.Err = "the script failed, saying nothing"
		}
		return nil
	}
	v := bytes.TrimSpace(r.Value)
	if len(v) == 0 {
		v = []byte("null")
	}
	if len(v) > maxOutput {
		return fmt.Errorf("the script's value is %d bytes of JSON, more than the %d a run may answer: return less (a summary, the fields needed)", len(v), maxOutput)
	}
	o.Value = v
	return nil
}

// Text is the outcome as the model reads it: the value (or the error),
// then the console lines.
func (o *Outcome) Text() string {
	var b strings.Builder
	if o.Err != "" {
		b.WriteString(o.Err)
	} else {
		b.Write(o.Value)
	}
	if len(o.Logs) > 0 || o.Truncated {
		b.WriteString("\n\nconsole:\n")
		for _, l := range o.Logs {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		if o.Truncated {
			b.WriteString("[more console output was dropped]\n")
		}
	}
	return b.String()
}

// tool-budget: an mcphost policy plugin in AssemblyScript, on the Extism
// AssemblyScript PDK. It keeps what tools cost a model within a budget:
//
//   tools_list  hides tools matching the "hide" patterns and shortens
//               descriptions longer than "max_description_chars";
//   tool_call   refuses calls to hidden tools, and calls whose arguments
//               are more than "max_argument_bytes" bytes of JSON.
//
// Every export follows the Extism convention: no parameters, JSON in through
// the input, JSON out through the output, 0 on success, or 1 after setting an
// error message. abi/SPEC.md in the mcphost repository is the contract.
//
// The entry file is main.ts, not index.ts: with json-as 1.6.0's transform, an
// entry at assembly/index.ts compiled, without a word, to an empty module.
import { JSON } from "json-as";
import { CallDecision, Describe, ToolCallInput, ToolsListInput, ToolsListOutput } from "./messages";
import { configError, settings, truncate, MAX_ARGUMENT_BYTES } from "./policy";
import * as host from "./host";

const NAME = "tool-budget";
const VERSION = "1.0.0";

/**
 * Names the plugin and its hooks. The host calls it first on every instance,
 * so it also reads and checks the configuration: a bad one fails the load.
 */
export function mcphost_describe(): i32 {
  const s = settings();
  if (s === null) return host.fail(configError());
  const d = new Describe();
  d.name = NAME;
  d.version = VERSION;
  d.hooks = ["tools_list", "tool_call"];
  host.output(JSON.stringify(d));
  if (host.enabled(host.DEBUG)) host.log(host.DEBUG, "configured: " + s.summary());
  return 0;
}

/** Hides tools matching "hide" and shortens long descriptions. */
export function mcphost_tools_list(): i32 {
  const s = settings();
  if (s === null) return host.fail(configError());
  const input = JSON.parse<ToolsListInput>(host.input());
  const out = new ToolsListOutput();
  let hidden = 0;
  let trimmed = 0;
  for (let i = 0; i < input.tools.length; i++) {
    const t = input.tools[i];
    if (s.hiddenBy(t.name, t.tool) !== null) {
      hidden++;
      continue;
    }
    const d = truncate(t.description, s.maxDescriptionChars);
    if (d !== t.description) {
      t.description = d;
      trimmed++;
    }
    out.tools.push(t);
  }
  host.output(JSON.stringify(out));
  if ((hidden > 0 || trimmed > 0) && host.enabled(host.DEBUG)) {
    host.log(
      host.DEBUG,
      "tools_list: hid " +
        hidden.toString() +
        " of " +
        input.tools.length.toString() +
        " tools, shortened " +
        trimmed.toString() +
        " descriptions",
    );
  }
  return 0;
}

/** Refuses calls to hidden tools and calls with oversized arguments. */
export function mcphost_tool_call(): i32 {
  const s = settings();
  if (s === null) return host.fail(configError());
  const input = JSON.parse<ToolCallInput>(host.input());
  const d = new CallDecision();
  const pattern = s.hiddenBy(input.name, input.tool);
  const args = input.arguments;
  if (pattern !== null) {
    d.action = "deny";
    d.reason = input.name + " is hidden by the tool-budget policy (it matches " + JSON.stringify(pattern) + ")";
    host.log(host.INFO, "denied a call to " + input.name + ": hidden by " + JSON.stringify(pattern));
  } else if (s.maxArgumentBytes > 0 && args !== null) {
    // The size of the arguments as the host passed them, in UTF-8 bytes.
    const size = <i64>String.UTF8.byteLength(args.data);
    if (size > s.maxArgumentBytes) {
      d.action = "deny";
      d.reason =
        "its arguments are " +
        size.toString() +
        " bytes of JSON, over the tool-budget limit of " +
        s.maxArgumentBytes.toString() +
        " bytes (" +
        MAX_ARGUMENT_BYTES +
        "); send less data per call, for example by splitting the work into several calls";
      host.log(
        host.INFO,
        "denied a call to " + input.name + ": " + size.toString() + " bytes of arguments, limit " + s.maxArgumentBytes.toString(),
      );
    }
  }
  host.output(JSON.stringify(d));
  return 0;
}

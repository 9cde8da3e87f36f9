// semver: an mcphost tool plugin in AssemblyScript, on the Extism
// AssemblyScript PDK (mcphost ABI 1.4, abi/SPEC.md section 14). It serves
// two tools for release work:
//
//   semver_compare  which of two versions is greater, by semver precedence
//   semver_bump     the next major, minor, patch or pre-release version
//
// Every export follows the Extism convention: no parameters, JSON in
// through the input, JSON out through the output, 0 on success. A tool's
// refusal is a tool error, {"field": ..., "message": ...}, which the host
// turns into an error result naming the field.
import { JSON } from "json-as";
import * as host from "./host";
import { bump, compare, parse } from "./semver";

@json
class InvokeInput {
  name: string = "";
  arguments: JSON.Raw = JSON.Raw.from("{}");
}

@json
class CompareArgs {
  a: string = "";
  b: string = "";
}

@json
class CompareOut {
  order: i32 = 0;
  greater: string = "";
}

@json
class BumpArgs {
  version: string = "";
  part: string = "";
  preid: string = "";
}

@json
class BumpOut {
  version: string = "";
}

@json
class ToolError {
  field: string = "";
  message: string = "";
}

/** Names the plugin; a tool plugin needs no policy hook. */
export function mcphost_describe(): i32 {
  host.output('{"abi":"1.4","name":"semver","version":"1.0.0","hooks":[]}');
  return 0;
}

const TOOLS = `{"tools":[
{"name":"semver_compare","title":"Compare versions","description":"Compare two semantic versions by semver 2.0.0 precedence (pre-releases before releases, build metadata ignored).",
 "inputSchema":{"type":"object","properties":{"a":{"type":"string","description":"a version, like 1.4.0-rc.1"},"b":{"type":"string","description":"another version"}},"required":["a","b"],"additionalProperties":false},
 "outputSchema":{"type":"object","properties":{"order":{"type":"integer","enum":[-1,0,1],"description":"-1 when a < b, 0 when equal, 1 when a > b"},"greater":{"type":"string","description":"the greater of the two, as written (a when equal)"}},"required":["order","greater"]},
 "annotations":{"readOnlyHint":true,"idempotentHint":true}},
{"name":"semver_bump","title":"Bump a version","description":"The next version: major, minor, patch, or the next pre-release (with preid, like rc).",
 "inputSchema":{"type":"object","properties":{"version":{"type":"string","description":"the current version"},"part":{"type":"string","enum":["major","minor","patch","prerelease"]},"preid":{"type":"string","description":"the pre-release identifier for part prerelease, like alpha or rc"}},"required":["version","part"],"additionalProperties":false},
 "outputSchema":{"type":"object","properties":{"version":{"type":"string"}},"required":["version"]},
 "annotations":{"readOnlyHint":true,"idempotentHint":true}}
]}`;

/** Lists the tools, once per version of the plugin. */
export function mcphost_tools(): i32 {
  host.output(TOOLS);
  return 0;
}

function toolError(field: string, message: string): i32 {
  const e = new ToolError();
  e.field = field;
  e.message = message;
  host.output(JSON.stringify(e));
  return 0;
}

function result(structured: string): i32 {
  host.output('{"content":[{"type":"text","text":' + JSON.stringify(structured) + '}],"structuredContent":' + structured + "}");
  return 0;
}

/** Runs one tool; the host has checked the arguments against its schema. */
export function mcphost_tool_invoke(): i32 {
  const input = JSON.parse<InvokeInput>(host.input());
  if (input.name == "semver_compare") {
    const args = JSON.parse<CompareArgs>(input.arguments.data);
    const a = parse(args.a);
    if (a === null) return toolError("a", JSON.stringify(args.a) + " is not a semantic version (MAJOR.MINOR.PATCH[-PRE][+BUILD])");
    const b = parse(args.b);
    if (b === null) return toolError("b", JSON.stringify(args.b) + " is not a semantic version (MAJOR.MINOR.PATCH[-PRE][+BUILD])");
    const out = new CompareOut();
    out.order = compare(a, b);
    out.greater = out.order < 0 ? args.b : args.a;
    return result(JSON.stringify(out));
  }
  if (input.name == "semver_bump") {
    const args = JSON.parse<BumpArgs>(input.arguments.data);
    const v = parse(args.version);
    if (v === null) return toolError("version", JSON.stringify(args.version) + " is not a semantic version (MAJOR.MINOR.PATCH[-PRE][+BUILD])");
    const n = bump(v, args.part, args.preid);
    if (n === null) return toolError("part", "must be major, minor, patch or prerelease");
    const out = new BumpOut();
    out.version = n.toString();
    return result(JSON.stringify(out));
  }
  return toolError("", "no tool " + JSON.stringify(input.name));
}

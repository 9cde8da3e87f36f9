// Host plumbing over the Extism AssemblyScript PDK: input, output, plugin
// errors and the abort handler (see examples/plugins/as-tool-budget, whose
// host.ts this follows).
import { Host, Memory } from "@extism/as-pdk";

@external("extism:host/env", "error_set")
declare function error_set(offset: u64): void;
@external("extism:host/env", "log_error")
declare function log_error(offset: u64): void;

/** The input of the current call, decoded from UTF-8. */
export function input(): string {
  return Host.inputString();
}

/** Sets the output of the current call, encoded as UTF-8. */
export function output(s: string): void {
  Host.output(Uint8Array.wrap(String.UTF8.encode(s)));
}

/** Sets the plugin error message; return 1 from the export after it. */
export function fail(message: string): i32 {
  error_set(Memory.allocateString(message).offset);
  return 1;
}

let aborting = false;

/** The abort handler (asc --use abort=assembly/host/abort): logs and traps. */
export function abort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  if (!aborting) {
    aborting = true;
    log_error(
      Memory.allocateString(
        "abort: " + (message !== null ? message : "(no message)") + " at " +
          (fileName !== null ? fileName : "?") + ":" + line.toString() + ":" + column.toString(),
      ).offset,
    );
  }
  unreachable();
}

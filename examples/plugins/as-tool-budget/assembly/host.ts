// Host plumbing over the Extism AssemblyScript PDK: input, output, plugin
// errors, logging and the abort handler. The PDK (1.0.0) covers input and
// config; error_set, get_log_level and log_trace it does not wrap, so they are
// declared here (all in mcphost ABI 1.0's list of allowed imports).
import { Host, Memory } from "@extism/as-pdk";

@external("extism:host/env", "error_set")
declare function error_set(offset: u64): void;
@external("extism:host/env", "get_log_level")
declare function get_log_level(): i32;
@external("extism:host/env", "log_trace")
declare function log_trace(offset: u64): void;
@external("extism:host/env", "log_debug")
declare function log_debug(offset: u64): void;
@external("extism:host/env", "log_info")
declare function log_info(offset: u64): void;
@external("extism:host/env", "log_warn")
declare function log_warn(offset: u64): void;
@external("extism:host/env", "log_error")
declare function log_error(offset: u64): void;

// Log levels as get_log_level reports them (mcphost ABI, section 11).
export const TRACE: i32 = 0;
export const DEBUG: i32 = 1;
export const INFO: i32 = 2;
export const WARN: i32 = 3;
export const ERROR: i32 = 4;

/** The input of the current call, decoded from UTF-8. */
export function input(): string {
  return Host.inputString();
}

/**
 * Sets the output of the current call. Host.outputString is not used: PDK
 * 1.0.0 sizes the output by the string's UTF-16 length, which truncates (and
 * overruns) any output that is not pure ASCII.
 */
export function output(s: string): void {
  Host.output(Uint8Array.wrap(String.UTF8.encode(s)));
}

/**
 * Sets the plugin error message; return 1 from the export after it. The host
 * shows the message to the operator and applies the plugin's on_error.
 */
export function fail(message: string): i32 {
  error_set(Memory.allocateString(message).offset);
  return 1;
}

/** Reports whether messages at level would be recorded by the host. */
export function enabled(level: i32): bool {
  return level >= get_log_level();
}

/**
 * Logs msg at level through Extism: the host files it under the plugin's
 * configured name. Callers check enabled() first when building msg costs.
 */
export function log(level: i32, msg: string): void {
  if (!enabled(level)) return;
  const offset = Memory.allocateString(msg).offset;
  switch (level) {
    case TRACE:
      log_trace(offset);
      break;
    case DEBUG:
      log_debug(offset);
      break;
    case INFO:
      log_info(offset);
      break;
    case WARN:
      log_warn(offset);
      break;
    default:
      log_error(offset);
  }
}

let aborting = false;

/**
 * The abort handler (asc --use abort=assembly/host/abort), in place of
 * AssemblyScript's default, which imports env.abort: a module importing
 * anything but Extism and WASI fails to load in mcphost. It logs the message
 * and traps, so the host throws the instance away; a failed allocation that
 * aborts again while logging goes straight to the trap.
 */
export function abort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  if (!aborting) {
    aborting = true;
    log(
      ERROR,
      "abort: " +
        (message !== null ? message : "(no message)") +
        " at " +
        (fileName !== null ? fileName : "?") +
        ":" +
        line.toString() +
        ":" +
        column.toString(),
    );
  }
  unreachable();
}

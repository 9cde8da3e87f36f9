// The tool-budget policy's configuration and rules, free of host calls but
// for reading the configuration.
import { JSON } from "json-as";
import { validateJSON } from "json-as/assembly/util/validateJson";
import { Config } from "@extism/as-pdk";

// Configuration keys, all optional (README.md has the full story).
export const HIDE = "hide"; // glob or list of globs over exposed or upstream tool names
export const MAX_ARGUMENT_BYTES = "max_argument_bytes"; // 0 or absent: no limit
export const MAX_DESCRIPTION_CHARS = "max_description_chars"; // 0 or absent: no limit

export class Settings {
  hide: string[] = [];
  maxArgumentBytes: i64 = 0;
  maxDescriptionChars: i32 = 0;

  /** Returns the first hide pattern that matches name or tool, or null. */
  hiddenBy(name: string, tool: string): string | null {
    for (let i = 0; i < this.hide.length; i++) {
      const p = unchecked(this.hide[i]);
      if (match(p, name) || match(p, tool)) return p;
    }
    return null;
  }

  summary(): string {
    return (
      HIDE +
      "=" +
      JSON.stringify(this.hide) +
      " " +
      MAX_ARGUMENT_BYTES +
      "=" +
      this.maxArgumentBytes.toString() +
      " " +
      MAX_DESCRIPTION_CHARS +
      "=" +
      this.maxDescriptionChars.toString()
    );
  }
}

let cached: Settings | null = null;
let problem = "";

/**
 * Returns the plugin's settings, read from the Extism config once per
 * instance (the config of an instance never changes), or null when the
 * config is invalid; configError() then says why.
 */
export function settings(): Settings | null {
  if (cached !== null) return cached;
  if (problem.length > 0) return null;
  const s = new Settings();
  const hide = patterns(HIDE);
  if (hide === null) return null;
  s.hide = hide;
  s.maxArgumentBytes = whole(MAX_ARGUMENT_BYTES, 999_999_999_999);
  if (s.maxArgumentBytes < 0) return null;
  const chars = whole(MAX_DESCRIPTION_CHARS, 1_000_000_000);
  if (chars < 0) return null;
  s.maxDescriptionChars = <i32>chars;
  cached = s;
  return s;
}

/** Why settings() returned null. */
export function configError(): string {
  return problem;
}

/**
 * Reads key as a whole number from 0 to max. HCL numbers arrive JSON-encoded
 * ("4096"); a string of digits works too. Absent or empty means 0. Returns -1
 * after setting problem.
 */
function whole(key: string, max: i64): i64 {
  const raw = Config.get(key);
  if (raw === null) return 0;
  const s = raw.trim();
  if (s.length == 0) return 0;
  let n: i64 = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57 || n > max) {
      problem = "config " + key + ": " + JSON.stringify(raw) + " is not a whole number from 0 to " + max.toString();
      return -1;
    }
    n = n * 10 + <i64>(c - 48);
  }
  if (n > max) {
    problem = "config " + key + ": " + s + " is over the maximum of " + max.toString();
    return -1;
  }
  return n;
}

/**
 * Reads key as a list of glob patterns: a JSON list of strings (what HCL
 * lists become), or a single pattern written as a plain string. Absent or
 * empty means none. Returns null after setting problem.
 */
function patterns(key: string): string[] | null {
  const raw = Config.get(key);
  const out: string[] = [];
  if (raw === null) return out;
  const s = raw.trim();
  if (s.length == 0) return out;
  if (s.charCodeAt(0) != 91 /* [ */) {
    out.push(s);
    return out;
  }
  // Check the syntax first: json-as aborts (traps) on malformed input, and a
  // bad config must be a clear load error instead.
  if (!validateJSON(s)) {
    problem = "config " + key + ": " + JSON.stringify(raw) + " is neither a pattern nor a JSON list of patterns";
    return null;
  }
  // Elements as raw JSON, to refuse non-strings with a message (JSON.Value
  // would do too, but costs some 45 KB of code).
  const list = JSON.parse<JSON.Raw[]>(s);
  for (let i = 0; i < list.length; i++) {
    const r = list[i].data;
    if (r.length < 2 || r.charCodeAt(0) != 34 /* " */) {
      problem = "config " + key + ": element " + i.toString() + " (" + r + ") is not a string";
      return null;
    }
    const p = JSON.parse<string>(r);
    if (p.length == 0) {
      problem = "config " + key + ": element " + i.toString() + " is an empty pattern";
      return null;
    }
    out.push(p);
  }
  return out;
}

/**
 * Reports whether name matches the glob pattern: "*" matches any run of
 * characters (also none), "?" any one character, anything else itself.
 */
export function match(pattern: string, name: string): bool {
  let p = 0;
  let n = 0;
  let star = -1;
  let mark = 0;
  while (n < name.length) {
    if (p < pattern.length) {
      const c = pattern.charCodeAt(p);
      if (c == 42 /* * */) {
        star = p++;
        mark = n;
        continue;
      }
      if (c == 63 /* ? */ || c == name.charCodeAt(n)) {
        p++;
        n++;
        continue;
      }
    }
    if (star < 0) return false;
    p = star + 1;
    n = ++mark;
  }
  while (p < pattern.length && pattern.charCodeAt(p) == 42) p++;
  return p == pattern.length;
}

/**
 * Shortens s to at most max characters (Unicode code points), the last one
 * an ellipsis, never splitting a surrogate pair. Returns s itself when it is
 * short enough.
 */
export function truncate(s: string, max: i32): string {
  if (max <= 0 || s.length <= max) return s; // a code point is 1 or 2 units
  let count = 0;
  let cut = 0; // index after the first max-1 code points
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d < 0xe000) i++;
    }
    count++;
    if (count == max - 1) cut = i + 1;
    if (count > max) return s.substring(0, cut) + "…";
  }
  return s;
}

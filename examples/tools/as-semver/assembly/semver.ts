// Semantic versions (https://semver.org, 2.0.0): parsing, precedence and
// increments, as release tooling needs them.

export class Version {
  major: u64 = 0;
  minor: u64 = 0;
  patch: u64 = 0;
  pre: string[] = [];
  build: string = "";

  toString(): string {
    let s = this.major.toString() + "." + this.minor.toString() + "." + this.patch.toString();
    if (this.pre.length > 0) s += "-" + this.pre.join(".");
    if (this.build.length > 0) s += "+" + this.build;
    return s;
  }
}

function isDigits(s: string): bool {
  if (s.length == 0) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

function isIdent(s: string): bool {
  if (s.length == 0) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ok = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 45;
    if (!ok) return false;
  }
  return true;
}

function numeric(s: string): bool {
  // A numeric identifier: digits without a leading zero (but "0").
  return isDigits(s) && (s.length == 1 || s.charCodeAt(0) != 48);
}

function toU64(s: string): u64 {
  let n: u64 = 0;
  for (let i = 0; i < s.length; i++) n = n * 10 + <u64>(s.charCodeAt(i) - 48);
  return n;
}

/** Parses a version ("v" in front is allowed); null if it is not one. */
export function parse(text: string): Version | null {
  let s = text.trim();
  if (s.startsWith("v") || s.startsWith("V")) s = s.substring(1);
  const v = new Version();
  const plus = s.indexOf("+");
  if (plus >= 0) {
    v.build = s.substring(plus + 1);
    s = s.substring(0, plus);
    const parts = v.build.split(".");
    for (let i = 0; i < parts.length; i++) if (!isIdent(parts[i])) return null;
  }
  const dash = s.indexOf("-");
  if (dash >= 0) {
    v.pre = s.substring(dash + 1).split(".");
    s = s.substring(0, dash);
    for (let i = 0; i < v.pre.length; i++) {
      const p = v.pre[i];
      if (!isIdent(p) || (isDigits(p) && !numeric(p))) return null;
    }
  }
  const core = s.split(".");
  if (core.length != 3) return null;
  for (let i = 0; i < 3; i++) {
    if (!numeric(core[i]) || core[i].length > 15) return null;
  }
  v.major = toU64(core[0]);
  v.minor = toU64(core[1]);
  v.patch = toU64(core[2]);
  return v;
}

function cmpU64(a: u64, b: u64): i32 {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Precedence (semver 2.0.0, section 11): -1, 0 or 1; build is ignored. */
export function compare(a: Version, b: Version): i32 {
  let c = cmpU64(a.major, b.major);
  if (c != 0) return c;
  c = cmpU64(a.minor, b.minor);
  if (c != 0) return c;
  c = cmpU64(a.patch, b.patch);
  if (c != 0) return c;
  // A version without a pre-release is greater than one with.
  if (a.pre.length == 0) return b.pre.length == 0 ? 0 : 1;
  if (b.pre.length == 0) return -1;
  const n = min(a.pre.length, b.pre.length);
  for (let i = 0; i < n; i++) {
    const x = a.pre[i];
    const y = b.pre[i];
    const xn = isDigits(x);
    const yn = isDigits(y);
    if (xn && yn) {
      c = cmpU64(toU64(x), toU64(y));
    } else if (xn) {
      c = -1; // numeric identifiers are lower than alphanumeric ones
    } else if (yn) {
      c = 1;
    } else {
      c = x < y ? -1 : x > y ? 1 : 0;
    }
    if (c != 0) return c;
  }
  return cmpU64(<u64>a.pre.length, <u64>b.pre.length);
}

/**
 * The next version: "major", "minor" and "patch" as npm's semver does (a
 * pre-release of the same core is released rather than skipped), and
 * "prerelease": the next pre-release, starting at PREID.0.
 */
export function bump(v: Version, part: string, preid: string): Version | null {
  const n = new Version();
  n.major = v.major;
  n.minor = v.minor;
  n.patch = v.patch;
  const wasPre = v.pre.length > 0;
  if (part == "major") {
    if (!(wasPre && v.minor == 0 && v.patch == 0)) n.major++;
    n.minor = 0;
    n.patch = 0;
  } else if (part == "minor") {
    if (!(wasPre && v.patch == 0)) n.minor++;
    n.patch = 0;
  } else if (part == "patch") {
    if (!wasPre) n.patch++;
  } else if (part == "prerelease") {
    if (!wasPre) {
      n.patch++;
      n.pre = [preid.length > 0 ? preid : "0"];
      if (preid.length > 0) n.pre.push("0");
    } else {
      n.pre = v.pre.slice(0);
      const last = n.pre[n.pre.length - 1];
      if (isDigits(last)) {
        n.pre[n.pre.length - 1] = (toU64(last) + 1).toString();
      } else {
        n.pre.push("0");
      }
      if (preid.length > 0 && n.pre[0] != preid) n.pre = [preid, "0"];
    }
  } else {
    return null;
  }
  return n;
}

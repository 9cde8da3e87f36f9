// Turns one run of the MCP conformance CLI (`conformance server ... -o DIR`)
// into one line per scenario and a closing count, and decides the exit code.
//
//   node report.mjs --log FILE --results DIR --label LABEL
//                   [--expected FILE] [--scenario NAME] [--informational]
//                   [--strict-xpass] [--suite NAME]
//
// Sources, in order of trust:
//   - DIR/server-<scenario>-<timestamp>/checks.json: every check the
//     scenario made, with status SUCCESS, FAILURE, WARNING, INFO or SKIPPED;
//   - the CLI's log: "=== Running scenario: X ===" names every scenario it
//     attempted (so one that crashed before writing checks.json still counts,
//     as a failure), and "✓/✗ X: a passed, b failed" is its own verdict.
// A scenario passes when it has no FAILURE check, as the CLI's own summary
// counts it; warnings are shown but do not fail it.
//
// Output, on stdout:
//   [LABEL] PASS  scenario  (n/m checks[, k warnings])
//   [LABEL] FAIL  scenario  (n/m checks; first-failing-check-id: its message)
//   [LABEL] XFAIL scenario  (expected: reason)        listed in --expected, failed
//   [LABEL] XPASS scenario  (listed as expected to fail: reason)  listed, passed
// then, unless --informational:
//   [LABEL] K expected failures not counted          (only when K > 0)
//   N passed, M failed
// where N counts PASS and XPASS, and M counts FAIL. With --informational the
// closing line is "[LABEL] informational: N of T scenarios pass" and the exit
// code is 0.
//
// Exit code: 1 when any scenario FAILs, when no scenario ran, or (with
// --strict-xpass) when an expected failure passed; else 0.

import { readFileSync, readdirSync, existsSync } from "node:fs";
import { join } from "node:path";

function parseArgs(argv) {
  const opts = { informational: false, strictXpass: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    switch (a) {
      case "--log": opts.log = val(); break;
      case "--results": opts.results = val(); break;
      case "--label": opts.label = val(); break;
      case "--expected": opts.expected = val(); break;
      case "--scenario": opts.scenario = val(); break;
      case "--suite": opts.suite = val(); break;
      case "--informational": opts.informational = true; break;
      case "--strict-xpass": opts.strictXpass = true; break;
      default: throw new Error(`unknown argument ${a}`);
    }
  }
  for (const k of ["log", "results", "label"]) {
    if (!opts[k]) throw new Error(`--${k} is required`);
  }
  return opts;
}

// readExpected reads "scenario  # reason" lines; blank and #-only lines are
// skipped.
export function readExpected(path) {
  const out = new Map();
  if (!path) return out;
  for (const raw of readFileSync(path, "utf8").split("\n")) {
    const hash = raw.indexOf("#");
    const name = (hash >= 0 ? raw.slice(0, hash) : raw).trim();
    const reason = hash >= 0 ? raw.slice(hash + 1).trim() : "";
    if (!name) continue;
    if (/\s/.test(name)) throw new Error(`${path}: one scenario per line, got "${raw}"`);
    out.set(name, reason || "no reason given");
  }
  return out;
}

// readChecks maps scenario name to its checks, from the CLI's result dirs.
function readChecks(dir) {
  const out = new Map();
  if (!existsSync(dir)) return out;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const m = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry.name);
    if (!m) continue;
    const file = join(dir, entry.name, "checks.json");
    if (!existsSync(file)) continue; // the CLI stopped during this scenario
    try {
      out.set(m[1], JSON.parse(readFileSync(file, "utf8")));
    } catch (e) {
      out.set(m[1], [{ id: "read-checks", status: "FAILURE", description: `unreadable ${file}`, errorMessage: String(e) }]);
    }
  }
  return out;
}

// readLog returns the scenarios the CLI attempted, in order, and its own
// verdicts.
function readLog(path) {
  const attempted = [];
  const verdicts = new Map();
  let planned = 0;
  const text = existsSync(path) ? readFileSync(path, "utf8") : "";
  for (const line of text.split("\n")) {
    let m = /^=== Running scenario: (\S+) ===$/.exec(line);
    if (m) { attempted.push(m[1]); continue; }
    m = /^Running \S+ suite \((\d+) scenarios?\)/.exec(line);
    if (m) { planned = +m[1]; continue; }
    m = /^([✓✗]) (\S+): (\d+) passed, (\d+) failed$/.exec(line);
    if (m) verdicts.set(m[2], { ok: m[1] === "✓", passed: +m[3], failed: +m[4] });
  }
  return { attempted, verdicts, planned };
}

function oneLine(s, max = 200) {
  s = String(s ?? "").replace(/\s+/g, " ").trim();
  return s.length > max ? s.slice(0, max - 1) + "…" : s;
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const expected = readExpected(opts.expected);
  const checks = readChecks(opts.results);
  const { attempted, verdicts, planned } = readLog(opts.log);

  // Every scenario the CLI attempted or wrote results for.
  const names = [...attempted];
  if (opts.scenario && !names.includes(opts.scenario)) names.push(opts.scenario);
  for (const n of checks.keys()) if (!names.includes(n)) names.push(n);

  const tag = `[${opts.label}]`;
  let passed = 0, failed = 0, xfailed = 0, xpassed = 0;
  for (const name of names) {
    const cs = checks.get(name);
    const verdict = verdicts.get(name);
    let ok, detail;
    if (cs) {
      const succ = cs.filter((c) => c.status === "SUCCESS").length;
      const fails = cs.filter((c) => c.status === "FAILURE");
      const warns = cs.filter((c) => c.status === "WARNING").length;
      ok = fails.length === 0;
      detail = `${succ}/${succ + fails.length} checks` + (warns ? `, ${warns} warning${warns > 1 ? "s" : ""}` : "");
      if (!ok) {
        const f = fails[0];
        detail += `; ${f.id}: ${oneLine(f.errorMessage || f.description)}`;
        if (fails.length > 1) detail += ` (and ${fails.length - 1} more)`;
      }
    } else if (verdict) {
      // The CLI caught an exception before the scenario wrote its results.
      ok = verdict.ok;
      detail = `${verdict.passed}/${verdict.passed + verdict.failed} checks, no results file`;
    } else {
      ok = false;
      detail = "no result: the conformance CLI stopped before finishing this scenario";
    }
    const reason = expected.get(name);
    let status;
    if (reason !== undefined) {
      status = ok ? "XPASS" : "XFAIL";
      detail = ok ? `listed as expected to fail: ${reason}; remove it from the list` : `expected: ${reason}`;
      ok ? xpassed++ : xfailed++;
      if (ok) passed++;
    } else {
      status = ok ? "PASS" : "FAIL";
      ok ? passed++ : failed++;
    }
    console.log(`${tag} ${status.padEnd(5)} ${name} (${detail})`);
  }

  // The suite announced more scenarios than it got to: each is a failure.
  const missing = planned - names.length;
  if (missing > 0) {
    console.log(`${tag} FAIL  ${missing} more scenario${missing > 1 ? "s" : ""} (never ran: the conformance CLI stopped after ${names.length} of ${planned})`);
    failed += missing;
  }

  const ran = new Set(names);
  for (const [name, reason] of expected) {
    if (!ran.has(name) && !opts.informational) {
      console.log(`${tag} note: ${name} is listed as an expected failure but did not run (${reason})`);
    }
  }

  if (opts.informational) {
    console.log(`${tag} informational: ${passed} of ${Math.max(names.length, planned)} scenarios pass${opts.suite ? ` (suite ${opts.suite})` : ""}`);
    return 0;
  }
  if (names.length === 0) {
    console.log(`${tag} error: no scenario ran; see ${opts.log}`);
  }
  if (xfailed > 0) console.log(`${tag} ${xfailed} expected failure${xfailed > 1 ? "s" : ""} not counted`);
  if (xpassed > 0) console.log(`${tag} ${xpassed} expected failure${xpassed > 1 ? "s" : ""} now pass${xpassed > 1 ? "" : "es"}: update the list`);
  console.log(`${passed} passed, ${failed} failed`);
  if (failed > 0 || names.length === 0) return 1;
  if (opts.strictXpass && xpassed > 0) return 1;
  return 0;
}

try {
  process.exitCode = main();
} catch (e) {
  console.error(`report: ${e.message}`);
  process.exitCode = 2;
}

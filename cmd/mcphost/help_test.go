package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
)

// runCLI runs the CLI in this process, for commands that stop before
// they do anything.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errs bytes.Buffer
	err := run(context.Background(), args, strings.NewReader(""), &out, &errs)
	switch e := err.(type) {
	case nil:
	case exitError:
		code = int(e)
	default:
		t.Fatalf("%q: %v", args, err)
	}
	return out.String(), errs.String(), code
}

// -h and --help print a command's usage to stdout and exit 0, whatever
// the command; "mcphost help COMMAND" is the same.
func TestHelp(t *testing.T) {
	for _, cmd := range [][]string{
		{"run"}, {"validate"}, {"tools"}, {"call"}, {"status"}, {"bench"},
		{"plugin"}, {"plugin", "inspect"}, {"plugin", "test"}, {"plugin", "check"},
		{"pins"}, {"pins", "list"}, {"auth"}, {"auth", "login"},
		{"servers"}, {"servers", "add"}, {"users"}, {"users", "add"}, {"users", "key", "rotate"}, {"toolsets"}, {"toolsets", "set"}, {"audit"}, {"audit", "tail"}, {"audit", "query"}, {"import"},
	} {
		for _, h := range []string{"-h", "--help"} {
			out, errs, code := runCLI(t, append(cmd, h)...)
			if code != 0 || errs != "" || !strings.HasPrefix(out, "usage:") {
				t.Errorf("mcphost %s %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(cmd, " "), h, code, out, errs)
			}
		}
		if len(cmd) == 1 {
			if out, errs, code := runCLI(t, "help", cmd[0]); code != 0 || !strings.HasPrefix(out, "usage:") {
				t.Errorf("mcphost help %s: exit %d\n%s%s", cmd[0], code, out, errs)
			}
		}
	}
	// A flag a command does not know is still a usage error, on stderr.
	if out, errs, code := runCLI(t, "validate", "--bogus"); code != 2 || out != "" || !strings.Contains(errs, "usage: mcphost validate CONFIG") {
		t.Errorf("validate --bogus: exit %d\n%s%s", code, out, errs)
	}
	// validate's usage says what it takes, not only "Usage of".
	if out, _, _ := runCLI(t, "validate", "-h"); !strings.Contains(out, "usage: mcphost validate CONFIG [--allow-missing-commands]\n") {
		t.Errorf("validate -h:\n%s", out)
	}
}

// plugin test -h names every hook of the ABI, which is what it runs.
func TestPluginTestHooks(t *testing.T) {
	out, _, _ := runCLI(t, "plugin", "test", "-h")
	for hook := range abi.HookMinor {
		if _, ok := abi.ExportForHook(hook); !ok {
			t.Errorf("abi.HookMinor has %q, which abi.ExportForHook does not know", hook)
		}
		if !regexp.MustCompile(`hook to run: .*\b` + hook + `\b`).MatchString(out) {
			t.Errorf("plugin test -h does not name hook %s:\n%s", hook, out)
		}
	}
}

// Every command and flag of the README's table of commands is in the
// usage that "mcphost --help" prints.
func TestUsageCoversREADME(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	out, _, _ := runCLI(t, "--help")
	row := regexp.MustCompile("(?m)^\\| (`mcphost .*?) \\| ")
	span := regexp.MustCompile("`(mcphost [^`]*)`")
	flagRE := regexp.MustCompile(`--[a-z][a-z-]*`)
	rows := row.FindAllStringSubmatch(string(readme), -1)
	if len(rows) < 10 {
		t.Fatalf("found %d rows of commands in README.md", len(rows))
	}
	for _, r := range rows {
		for _, s := range span.FindAllStringSubmatch(r[1], -1) {
			line := strings.ReplaceAll(s[1], `\|`, "|")
			// The command: "mcphost" and the words that follow, up to
			// the first argument, each the first of its alternatives.
			var words []string
			for _, w := range strings.Fields(line) {
				if !regexp.MustCompile(`^[a-z|]+$`).MatchString(w) {
					break
				}
				words = append(words, strings.Split(w, "|")[0])
			}
			if cmd := strings.Join(words, " "); !strings.Contains(out, cmd) {
				t.Errorf("mcphost --help lacks %q (README: %s)", cmd, line)
			}
			for _, f := range flagRE.FindAllString(line, -1) {
				if !strings.Contains(out, f) {
					t.Errorf("mcphost --help lacks %s (README: %s)", f, line)
				}
			}
		}
	}
}

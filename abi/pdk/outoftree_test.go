package pdk_test

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
)

// The guest library is the module github.com/mcphost-project/mcphost/abi,
// not yet published: a plugin in a module of its own reaches it through a
// replace directive. TestOutOfTreeModule builds the plugin of SPEC §12.1 the way
// that section tells a plugin author to, in a fresh module outside this
// repository: its go.mod snippet (with the replace pointed at this
// checkout), `go mod tidy`, the build command; then runs the module's
// tool_call. README.md's Policies section must give the same replace.
func TestOutOfTreeModule(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a plugin module with the go command")
	}
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	spec, err := os.ReadFile("../SPEC.md")
	if err != nil {
		t.Fatal(err)
	}
	sec := section(t, string(spec), "### 12.1 ", "### 12.2 ")
	gomod := fenced(t, sec, "go.mod")
	code := fenced(t, sec, "go")
	replaceRE := regexp.MustCompile(`(?m)^replace github\.com/mcphost-project/mcphost/abi => (\S+)$`)
	m := replaceRE.FindStringSubmatch(gomod)
	if m == nil {
		t.Fatalf("SPEC §12.1's go.mod has no replace of github.com/mcphost-project/mcphost/abi:\n%s", gomod)
	}
	// The repository's README (absent from the module's published zip).
	switch readme, err := os.ReadFile("../../README.md"); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		t.Fatal(err)
	default:
		policies := section(t, string(readme), "## Policies", "\n## ")
		if !strings.Contains(policies, m[0]) {
			t.Errorf("README.md's Policies section does not give the replace directive %q", m[0])
		}
	}

	root, err := filepath.Abs("..") // the abi module's directory
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod = strings.Replace(gomod, m[0], "replace github.com/mcphost-project/mcphost/abi => "+root, 1)
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", gomod)
	write("main.go", code)
	// This module's go.sum holds every sum the plugin's module needs, so
	// tidy needs no network where this repository's tests ran before.
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write("go.sum", string(sum))
	tidy := exec.Command(gocmd, "mod", "tidy")
	tidy.Dir = dir
	if b, err := tidy.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy: %v\n%s", err, b)
	}
	in := load(t, buildPlugin(t, dir), nil)
	var d abi.CallDecision
	in.ok(abi.ExportToolCall, abi.ToolCallInput{Caller: caller, Name: "x__delete", Server: "x", Tool: "delete"}, &d)
	if d.Action != abi.ActionDeny {
		t.Errorf("the §12.1 example answered %+v to a delete, want a denial", d)
	}
}

// section returns the text of doc from the line starting with start up to
// the next end.
func section(t *testing.T, doc, start, end string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+start)
	if i < 0 {
		t.Fatalf("no section %q", start)
	}
	s := doc[i+1:]
	if j := strings.Index(s[len(start):], end); j >= 0 {
		s = s[:len(start)+j]
	}
	return s
}

// fenced returns the body of the first code block of lang in s.
func fenced(t *testing.T, s, lang string) string {
	t.Helper()
	open := "\n```" + lang + "\n"
	i := strings.Index(s, open)
	if i < 0 {
		t.Fatalf("no ```%s block in:\n%s", lang, s)
	}
	s = s[i+len(open):]
	j := strings.Index(s, "\n```\n")
	if j < 0 {
		t.Fatalf("unterminated ```%s block", lang)
	}
	return s[:j+1]
}

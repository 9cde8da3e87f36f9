// Package policytest runs mcphost policies natively, with no Wasm, for tests
// written with go test. A policy built with abi/pdk is plain Go: this package
// runs it through pdk.Guest, the same code its Wasm exports run, and
// compares what it returns with golden JSON.
//
// The usual test is one line over a directory of txtar files:
//
//	func TestPolicy(t *testing.T) {
//		policytest.Run(t, New, "testdata/*.txtar")
//	}
//
// Each file is one case. The comment (the text before the first section)
// names the hook on a line "hook: tools_list" (or tool_call, tool_result,
// describe); the rest of the comment is a description. The sections are:
//
//	config.json   optional: the plugin's HCL config object as JSON
//	input.json    the hook's input (omit for describe)
//	output.json   the expected output, compared as JSON values
//	error         or: text the plugin error message must contain
//
// Run with -policytest.update to rewrite output.json and error sections from
// what the policy returns.
package policytest

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
)

var update = flag.Bool("policytest.update", false, "rewrite the expected outputs of policytest golden files")

// Config is a plugin configuration as the host passes it to a plugin:
// every value a string.
type Config map[string]string

// Source returns c as a pdk.ConfigSource.
func (c Config) Source() pdk.ConfigSource {
	return func(key string) (string, bool) {
		v, ok := c[key]
		return v, ok
	}
}

// ConfigFromJSON converts a JSON object, standing for the plugin's HCL
// config object, the way the host does: string values as they are, any
// other value JSON-encoded.
func ConfigFromJSON(object []byte) (Config, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(object, &m); err != nil {
		return nil, fmt.Errorf("policytest: config: %w", err)
	}
	c := make(Config, len(m))
	for k, raw := range m {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			c[k] = s
			continue
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			return nil, fmt.Errorf("policytest: config %q: %w", k, err)
		}
		c[k] = compact.String()
	}
	return c, nil
}

// Call runs export of p, configured with config, on input, as a fresh plugin
// instance would: Configure first, then the hook. input may be []byte, a
// string of JSON, or any value to encode as JSON. It returns the output
// bytes or the plugin error.
func Call(p pdk.Policy, config Config, export string, input any) ([]byte, error) {
	data, err := inputBytes(input)
	if err != nil {
		return nil, err
	}
	return pdk.NewGuest(p, config.Source()).Call(export, data)
}

func inputBytes(input any) ([]byte, error) {
	switch v := input.(type) {
	case nil:
		return nil, nil
	case []byte:
		return v, nil
	case string:
		return []byte(v), nil
	}
	b, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("policytest: encoding input: %w", err)
	}
	return b, nil
}

// EqualJSON reports whether a and b hold the same JSON value, whatever
// their layout and key order, and an error if either is not JSON.
func EqualJSON(a, b []byte) (bool, error) {
	na, err := normalize(a)
	if err != nil {
		return false, err
	}
	nb, err := normalize(b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(na, nb), nil
}

// normalize returns the indented form of a JSON value with sorted keys.
func normalize(b []byte) ([]byte, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("policytest: not JSON: %w", err)
	}
	return json.MarshalIndent(v, "", "  ")
}

// Case is one golden case, as read from a txtar file.
type Case struct {
	Hook   string // a hook name, or "describe"
	Config Config
	Input  []byte
	Output []byte // the expected output, if no Error
	Error  string // text the expected plugin error contains
}

// Export returns the name of the export c runs.
func (c *Case) Export() (string, error) {
	if c.Hook == "describe" {
		return abi.ExportDescribe, nil
	}
	export, ok := abi.ExportForHook(c.Hook)
	if !ok {
		return "", fmt.Errorf("policytest: unknown hook %q", c.Hook)
	}
	return export, nil
}

// ParseCase reads a case from the contents of a txtar file.
func ParseCase(data []byte) (*Case, error) {
	ar := txtar.Parse(data)
	c := &Case{}
	for _, line := range strings.Split(string(ar.Comment), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "hook:"); ok {
			c.Hook = strings.TrimSpace(v)
		}
	}
	if c.Hook == "" {
		return nil, fmt.Errorf(`policytest: no "hook:" line in the comment`)
	}
	if _, err := c.Export(); err != nil {
		return nil, err
	}
	var haveOutput, haveError bool
	for _, f := range ar.Files {
		switch f.Name {
		case "config.json":
			cfg, err := ConfigFromJSON(f.Data)
			if err != nil {
				return nil, err
			}
			c.Config = cfg
		case "input.json":
			c.Input = f.Data
		case "output.json":
			c.Output, haveOutput = f.Data, true
		case "error":
			c.Error, haveError = strings.TrimSpace(string(f.Data)), true
		default:
			return nil, fmt.Errorf("policytest: unknown section %q", f.Name)
		}
	}
	if haveOutput == haveError {
		return nil, fmt.Errorf("policytest: want exactly one of the sections output.json and error")
	}
	if c.Input == nil && c.Hook != "describe" {
		return nil, fmt.Errorf("policytest: no input.json section")
	}
	return c, nil
}

// Run runs every txtar file matching pattern as a subtest named after the
// file, each against a new policy from newPolicy.
func Run(t *testing.T, newPolicy func() pdk.Policy, pattern string) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("policytest: no files match %s", pattern)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		t.Run(name, func(t *testing.T) { runFile(t, newPolicy, file) })
	}
}

func runFile(t *testing.T, newPolicy func() pdk.Policy, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseCase(data)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	export, _ := c.Export()
	got, callErr := Call(newPolicy(), c.Config, export, c.Input)

	if *update {
		ar := txtar.Parse(data)
		var files []txtar.File
		for _, f := range ar.Files {
			if f.Name != "output.json" && f.Name != "error" {
				files = append(files, f)
			}
		}
		if callErr != nil {
			files = append(files, txtar.File{Name: "error", Data: []byte(callErr.Error() + "\n")})
		} else {
			out, err := normalize(got)
			if err != nil {
				t.Fatalf("%s: output: %v", file, err)
			}
			files = append(files, txtar.File{Name: "output.json", Data: append(out, '\n')})
		}
		ar.Files = files
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}

	switch {
	case c.Error != "" && callErr == nil:
		t.Fatalf("%s: got output\n%s\nwant a plugin error containing %q", file, indent(got), c.Error)
	case c.Error != "":
		if !strings.Contains(callErr.Error(), c.Error) {
			t.Fatalf("%s: got plugin error %q, want it to contain %q", file, callErr, c.Error)
		}
	case callErr != nil:
		t.Fatalf("%s: got plugin error %q, want output\n%s", file, callErr, c.Output)
	default:
		eq, err := EqualJSON(got, c.Output)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if !eq {
			t.Fatalf("%s: got output\n%s\nwant\n%s\n(run go test with -policytest.update to accept it)", file, indent(got), indent(c.Output))
		}
	}
}

func indent(b []byte) string {
	if n, err := normalize(b); err == nil {
		return string(n)
	}
	return string(b)
}

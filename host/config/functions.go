package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// maxFileBytes bounds file(): it is meant for tokens and small snippets, and a
// bound keeps a mistyped path (a log, a disk image) from eating memory.
const maxFileBytes = 1 << 20

// evalContext returns the functions the config language offers. There are no
// variables: values come from the file, the environment, or files on disk.
func (d *decoder) evalContext() *hcl.EvalContext {
	return &hcl.EvalContext{
		Functions: map[string]function.Function{
			"env":  d.envFunc(),
			"file": d.fileFunc(),
		},
	}
}

// unsetEnvError lets fixEnvDiags recognise an unset variable and replace
// HCL's generic "Error in function call" with a diagnostic that says the fix.
type unsetEnvError struct{ name string }

func (e *unsetEnvError) Error() string {
	return fmt.Sprintf("environment variable %q is not set", e.name)
}

// envFunc is env("NAME") or env("NAME", "default"). A value read from the
// environment is marked sensitive (a default is written in the file and is
// not).
func (d *decoder) envFunc() function.Function { return envFunction(d.sensitive) }

// envFunction is env() with mark applied to what it reads from the
// environment.
func envFunction(mark func(v, what string) cty.Value) function.Function {
	return function.New(&function.Spec{
		Description: "Returns the value of an environment variable, or the default if it is unset.",
		Params:      []function.Parameter{{Name: "name", Type: cty.String}},
		VarParam:    &function.Parameter{Name: "default", Type: cty.String},
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if len(args) > 2 {
				return cty.NilVal, function.NewArgErrorf(2, "env takes a name and at most one default")
			}
			name := args[0].AsString()
			if name == "" {
				return cty.NilVal, function.NewArgErrorf(0, "the variable name must not be empty")
			}
			if v, ok := os.LookupEnv(name); ok {
				if !utf8.ValidString(v) {
					return cty.NilVal, function.NewArgErrorf(0, "environment variable %q is not valid UTF-8", name)
				}
				return mark(v, fmt.Sprintf("env(%q)", name)), nil
			}
			if len(args) == 2 {
				return args[1], nil
			}
			return cty.NilVal, &unsetEnvError{name: name}
		},
	})
}

// fileFunc is file("path"): the contents of a file, relative paths resolved
// against the config file's directory. Trailing newlines are dropped, as the
// shell's $(cat path) does, because secrets files usually end with one and a
// token with a newline in it never matches.
func (d *decoder) fileFunc() function.Function {
	return fileFunction(d.path, func(path string) {
		if !slices.Contains(d.sources, path) {
			d.sources = append(d.sources, path)
		}
	}, d.sensitive)
}

// fileFunction is file() with paths resolved by resolve, each file read
// told to seen (when not nil), and mark applied to what it reads.
func fileFunction(resolve func(string) string, seen func(path string), mark func(v, what string) cty.Value) function.Function {
	return function.New(&function.Spec{
		Description: "Returns the contents of a file, without trailing newlines.",
		Params:      []function.Parameter{{Name: "path", Type: cty.String}},
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			path := resolve(args[0].AsString())
			data, err := readSmallFile(path)
			if err != nil {
				return cty.NilVal, function.NewArgError(0, err)
			}
			if !utf8.Valid(data) {
				return cty.NilVal, function.NewArgErrorf(0, "%s is not valid UTF-8 text", path)
			}
			if seen != nil {
				seen(path)
			}
			return mark(strings.TrimRight(string(data), "\r\n"), fmt.Sprintf("file(%q)", args[0].AsString())), nil
		},
	})
}

// plainValue is a value read by env() or file() as it is: for caller
// templates, evaluated when a caller's session starts and never shown.
func plainValue(v, _ string) cty.Value { return cty.StringVal(v) }

// readSmallFile reads a regular file of at most maxFileBytes. Devices and
// pipes are refused because reading them could block or never end.
func readSmallFile(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxFileBytes)
	}
	return data, nil
}

// fixEnvDiags rewrites the diagnostic for env() of an unset variable so that
// it names the variable and the two ways to fix it.
func fixEnvDiags(diags hcl.Diagnostics) {
	for _, diag := range diags {
		extra, ok := hcl.DiagnosticExtra[hclsyntax.FunctionCallDiagExtra](diag)
		if !ok {
			continue
		}
		var unset *unsetEnvError
		if !errors.As(extra.FunctionCallError(), &unset) {
			continue
		}
		diag.Summary = "Environment variable not set"
		diag.Detail = fmt.Sprintf(
			"The environment variable %q is not set. Export it before starting mcphost "+
				"(export %s=...), or give a default: env(%q, \"default\"). A running mcphost "+
				"reads the environment it was started with: for a value added at reload, "+
				"write it to a file and use file(\"PATH\").",
			unset.name, unset.name, unset.name)
		if diag.Context != nil {
			diag.Subject = diag.Context
		}
	}
}

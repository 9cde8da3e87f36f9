package config

import (
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Diagnostics is every problem found in one config file, in source order,
// together with the parsed source so they can be printed with snippets.
type Diagnostics struct {
	List  hcl.Diagnostics
	files map[string]*hcl.File
	// partial is the file as far as it decoded, when List has errors.
	partial *File
}

// Add adds a diagnostic found after decoding (such as a plugin module that
// does not compile), in source order among the others.
func (d *Diagnostics) Add(diag *hcl.Diagnostic) {
	d.List = append(d.List, diag)
	sortBySource(d.List)
}

// Partial returns the config as far as it decoded when there are errors,
// so that checks which come after decoding (mcphost validate loading each
// plugin's module) still report mistakes independent of those errors, in
// the same run. It is nil when there are no errors (Load and Parse return
// the File then) or when the file could not be parsed or decoded at all.
//
// It must not be served: a block with an error holds zero values where
// the error is. Plugins and ToolPlugins keep only the plugins whose module
// can be loaded as written (no error in source, sha256, config, memory,
// timeout, instances, env, allowed_paths or allowed_hosts), so that
// loading them reports nothing that merely repeats an error.
func (d *Diagnostics) Partial() *File {
	if d == nil {
		return nil
	}
	return d.partial
}

// HasErrors reports whether any diagnostic is an error (warnings alone do not
// stop the host from starting).
func (d *Diagnostics) HasErrors() bool {
	return d != nil && d.List.HasErrors()
}

// WriteText prints every diagnostic with HCL's own writer: file:line:col, the
// summary, the source snippet and the detail. A width of 0 disables wrapping.
func (d *Diagnostics) WriteText(w io.Writer, width uint, color bool) error {
	if d == nil || len(d.List) == 0 {
		return nil
	}
	tw := hcl.NewDiagnosticTextWriter(w, d.files, width, color)
	for _, diag := range d.List {
		// A compiler-style first line (file:line:col) that editors and grep
		// understand, then HCL's own rendering with the source snippet.
		if r := diag.Subject; r != nil {
			fmt.Fprintf(w, "%s: %s\n", position(*r), severityWord(diag.Severity))
		}
		if err := tw.WriteDiagnostic(diag); err != nil {
			return fmt.Errorf("config: write diagnostics: %w", err)
		}
	}
	return nil
}

// position is where r starts as file:line:col, the one way mcphost writes
// a place in a config (HCL's own Range.String is file:line,col-col).
func position(r hcl.Range) string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

func severityWord(s hcl.DiagnosticSeverity) string {
	if s == hcl.DiagWarning {
		return "warning"
	}
	return "error"
}

// Err returns the errors as one error value, or nil if there are none, for
// callers such as a hot reload that log instead of printing snippets. Its
// text has every error, one a line, each starting with file:line:col as
// WriteText writes them; errors.As finds them as hcl.Diagnostics.
func (d *Diagnostics) Err() error {
	if !d.HasErrors() {
		return nil
	}
	var errs hcl.Diagnostics
	for _, diag := range d.List {
		if diag.Severity == hcl.DiagError {
			errs = append(errs, diag)
		}
	}
	return fmt.Errorf("config: %w", diagErrors(errs))
}

// diagErrors prints diagnostics as WriteText's first lines do, rather
// than as hcl.Diagnostics.Error does (file:line,col-col, and only the
// first).
type diagErrors hcl.Diagnostics

func (e diagErrors) Error() string {
	var b strings.Builder
	for i, diag := range e {
		if i > 0 {
			b.WriteByte('\n')
		}
		if diag.Subject != nil {
			b.WriteString(position(*diag.Subject) + ": ")
		}
		b.WriteString(diag.Summary)
		if diag.Detail != "" {
			b.WriteString("; " + diag.Detail)
		}
	}
	return b.String()
}

// Unwrap gives the diagnostics themselves, for errors.As.
func (e diagErrors) Unwrap() error { return hcl.Diagnostics(e) }

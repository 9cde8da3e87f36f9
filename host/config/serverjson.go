package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcphost-project/mcphost/host/upstream"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcphost-project/mcphost/host"
)

// ServerSpec is a server definition in JSON, as the admin API takes and
// the store keeps it: the server block's arguments under their HCL names,
// and its label as name.
type ServerSpec struct {
	Name            string            `json:"name"`
	Transport       string            `json:"transport,omitempty"`
	Command         string            `json:"command,omitempty"`
	Args            []string          `json:"args,omitempty"`
	Env             map[string]string `json:"env,omitempty"`
	Cwd             string            `json:"cwd,omitempty"`
	URL             string            `json:"url,omitempty"`
	Headers         map[string]string `json:"headers,omitempty"`
	Timeout         string            `json:"timeout,omitempty"`
	IdleTimeout     string            `json:"idle_timeout,omitempty"`
	ConnectTimeout  string            `json:"connect_timeout,omitempty"`
	Sessions        string            `json:"sessions,omitempty"`
	MaxSessions     int               `json:"max_sessions,omitempty"`
	ProtocolVersion string            `json:"protocol_version,omitempty"`
	OAuth           *OAuthSpec        `json:"oauth,omitempty"`

	// SecretArgs lists the positions (from 0) of the args that are
	// secrets, and SecretURL makes the whole URL one, its path included:
	// the store seals them and the API shows them masked (Split). Only
	// the API has them: a config file's secrets stay in env() and file().
	SecretArgs []int `json:"secret_args,omitempty"`
	SecretURL  bool  `json:"secret_url,omitempty"`
}

// OAuthSpec is a server's oauth block in JSON.
type OAuthSpec struct {
	Grant             string   `json:"grant,omitempty"`
	Mode              string   `json:"mode,omitempty"`
	ClientID          string   `json:"client_id,omitempty"`
	ClientSecret      string   `json:"client_secret,omitempty"`
	Issuer            string   `json:"issuer,omitempty"`
	Audience          string   `json:"audience,omitempty"`
	Scopes            []string `json:"scopes,omitempty"`
	RedirectURL       string   `json:"redirect_url,omitempty"`
	ClientMetadataURL string   `json:"client_metadata_url,omitempty"`
}

// FieldError is one mistake in a definition, at the field (a JSON name,
// dotted for nested ones: "oauth.client_id") it is about; "" for the
// definition as a whole.
type FieldError struct {
	Field  string `json:"field,omitempty"`
	Detail string `json:"detail"`
}

// SpecError lists every mistake found in a definition.
type SpecError struct {
	// Syntax is set when the JSON itself is malformed, or has unknown
	// fields or wrong types: the definition was not read at all.
	Syntax bool
	Errors []FieldError
}

func (e *SpecError) Error() string {
	parts := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		parts[i] = fe.Detail
		if fe.Field != "" {
			parts[i] = fe.Field + ": " + fe.Detail
		}
	}
	return strings.Join(parts, "; ")
}

// DecodeServerSpec reads one JSON definition strictly: unknown fields,
// wrong types and trailing data are errors naming the field.
func DecodeServerSpec(data []byte) (ServerSpec, error) {
	var s ServerSpec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return ServerSpec{}, &SpecError{Syntax: true, Errors: []FieldError{jsonFieldError(err)}}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return ServerSpec{}, &SpecError{Syntax: true, Errors: []FieldError{{Detail: "the body holds more than one JSON value; send one object"}}}
	}
	return s, nil
}

// jsonFieldError turns encoding/json's error into a field and a sentence.
func jsonFieldError(err error) FieldError {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return FieldError{Field: te.Field, Detail: fmt.Sprintf("expected %s, got a JSON %s", jsonKind(te.Type.Kind().String()), te.Value)}
	case errors.As(err, &se):
		return FieldError{Detail: fmt.Sprintf("malformed JSON at byte %d: %s", se.Offset, se)}
	case errors.Is(err, io.EOF):
		return FieldError{Detail: "the body is empty; send a JSON object"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return FieldError{Detail: "the JSON ends early"}
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		f = strings.Trim(f, `"`)
		return FieldError{Field: f, Detail: fmt.Sprintf("unknown field %q.%s", f, didYouMean(f, specFields()))}
	}
	return FieldError{Detail: strings.TrimPrefix(msg, "json: ")}
}

func jsonKind(k string) string {
	switch k {
	case "slice":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	case "int":
		return "an integer"
	}
	return "a " + k
}

func specFields() []string {
	var out []string
	for _, a := range serverSchema.Attributes {
		out = append(out, a.Name)
	}
	return append(out, "name", "oauth", "secret_args", "secret_url")
}

// Server checks a definition exactly as `mcphost validate` checks a server
// block — it is written out as one and decoded by the same code — and
// returns the host's configuration of it. configPath anchors a relative
// cwd, as in the file. Mistakes come back as a *SpecError naming every
// field at fault.
func (s ServerSpec) Server(configPath string) (upstream.ServerConfig, error) {
	src := s.hcl()
	dir := filepath.Dir(configPath)
	f, diags := hclsyntax.ParseConfig(src, "definition.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		// Only values the writer quoted and escaped are in src, so this
		// should not happen; if it does, the definition is what to change.
		return upstream.ServerConfig{}, &SpecError{Errors: []FieldError{{Detail: "the definition cannot be written as a server block: " + diags.Error()}}}
	}
	d := &decoder{dir: dir, sourceRanges: map[string]hcl.Range{}, commandRanges: map[string]hcl.Range{}, configRanges: map[string]configRange{}}
	d.ctx = d.evalContext()
	content, diags := f.Body.Content(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "server", LabelNames: []string{"name"}}}})
	if diags.HasErrors() || len(content.Blocks) != 1 {
		return upstream.ServerConfig{}, &SpecError{Errors: []FieldError{{Detail: "the definition cannot be written as one server block"}}}
	}
	block := content.Blocks[0]
	sc := d.decodeServer(block)
	var errs []FieldError
	ranges := fieldRanges(block)
	for _, diag := range d.diags {
		if diag.Severity != hcl.DiagError {
			continue
		}
		errs = append(errs, FieldError{Field: fieldAt(ranges, diag.Subject), Detail: strings.TrimSpace(diag.Summary + ": " + diag.Detail)})
	}
	if s.Name == "" {
		errs = append(errs, FieldError{Field: "name", Detail: "a server needs a name: letters, digits, '_' or '-'"})
	}
	errs = append(errs, s.checkSecretMarks()...)
	if len(errs) == 0 {
		if err := (host.Config{Servers: []upstream.ServerConfig{sc}}).WithDefaults().Validate(); err != nil {
			errs = append(errs, FieldError{Detail: err.Error()})
		}
	}
	if len(errs) > 0 {
		return upstream.ServerConfig{}, &SpecError{Errors: errs}
	}
	sc.SecretArgs, sc.SecretURL = slices.Clone(s.SecretArgs), s.SecretURL
	return sc, nil
}

// CheckCommand checks that a stdio server's program exists where it would
// be run, so that adding a definition with a typo fails at once rather
// than as a retrying upstream. (A stored server whose program went away
// later still loads, and its status says why it fails.)
func CheckCommand(sc upstream.ServerConfig) error {
	if sc.Transport != "" && sc.Transport != upstream.TransportStdio {
		return nil
	}
	if err := findCommand(sc); err != nil {
		return &SpecError{Errors: []FieldError{{Field: "command", Detail: err.Error()}}}
	}
	return nil
}

func findCommand(sc upstream.ServerConfig) error {
	cmd := sc.Command
	if strings.ContainsRune(cmd, filepath.Separator) && !filepath.IsAbs(cmd) && sc.Cwd != "" {
		cmd = filepath.Join(sc.Cwd, cmd)
	}
	if _, err := exec.LookPath(cmd); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return fmt.Errorf("no program %q on this machine's PATH; install it or give its full path", sc.Command)
		}
		return fmt.Errorf("cannot run %q: %v", sc.Command, errors.Unwrap(err))
	}
	return nil
}

// hcl renders the definition as a server block. Every value is a literal
// (hclwrite escapes "${" and "%{"), so a definition from outside cannot
// call env() or file().
func (s ServerSpec) hcl() []byte {
	f := hclwrite.NewEmptyFile()
	b := f.Body().AppendNewBlock("server", []string{s.Name}).Body()
	str := func(name, v string) {
		if v != "" {
			b.SetAttributeValue(name, cty.StringVal(v))
		}
	}
	str("transport", s.Transport)
	str("command", s.Command)
	strList(b, "args", s.Args)
	strMap(b, "env", s.Env)
	str("cwd", s.Cwd)
	str("url", s.URL)
	strMap(b, "headers", s.Headers)
	str("timeout", s.Timeout)
	str("idle_timeout", s.IdleTimeout)
	str("connect_timeout", s.ConnectTimeout)
	str("sessions", s.Sessions)
	if s.MaxSessions != 0 {
		b.SetAttributeValue("max_sessions", cty.NumberIntVal(int64(s.MaxSessions)))
	}
	str("protocol_version", s.ProtocolVersion)
	if o := s.OAuth; o != nil {
		ob := b.AppendNewBlock("oauth", nil).Body()
		for _, kv := range [][2]string{{"grant", o.Grant}, {"mode", o.Mode}, {"client_id", o.ClientID}, {"client_secret", o.ClientSecret},
			{"issuer", o.Issuer}, {"audience", o.Audience}, {"redirect_url", o.RedirectURL}, {"client_metadata_url", o.ClientMetadataURL}} {
			if kv[1] != "" {
				ob.SetAttributeValue(kv[0], cty.StringVal(kv[1]))
			}
		}
		strList(ob, "scopes", o.Scopes)
	}
	return f.Bytes()
}

// strList writes a list of strings; an empty one as [], a nil one not at
// all.
func strList(b *hclwrite.Body, name string, list []string) {
	if list == nil {
		return
	}
	if len(list) == 0 {
		b.SetAttributeValue(name, cty.ListValEmpty(cty.String))
		return
	}
	vals := make([]cty.Value, len(list))
	for i, v := range list {
		vals[i] = cty.StringVal(v)
	}
	b.SetAttributeValue(name, cty.ListVal(vals))
}

// strMap writes a map of strings as an object whose keys are all quoted
// (and escaped): a bare key such as "for" would start a for expression.
func strMap(b *hclwrite.Body, name string, m map[string]string) {
	if m == nil {
		return
	}
	attrs := make([]hclwrite.ObjectAttrTokens, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		attrs = append(attrs, hclwrite.ObjectAttrTokens{
			Name:  hclwrite.TokensForValue(cty.StringVal(k)),
			Value: hclwrite.TokensForValue(cty.StringVal(m[k])),
		})
	}
	b.SetAttributeRaw(name, hclwrite.TokensForObject(attrs))
}

// fieldRange is where a field of the rendered block is written.
type fieldRange struct {
	field string
	rng   hcl.Range
}

// fieldRanges lists where each field of the rendered block is, innermost
// last, so the last one that holds a diagnostic's subject names it.
func fieldRanges(block *hcl.Block) []fieldRange {
	out := []fieldRange{{"name", block.LabelRanges[0]}}
	body, ok := block.Body.(*hclsyntax.Body)
	if !ok {
		return out
	}
	for name, a := range body.Attributes {
		out = append(out, fieldRange{name, a.SrcRange})
	}
	for _, nb := range body.Blocks {
		out = append(out, fieldRange{nb.Type, nb.Range()})
		for name, a := range nb.Body.Attributes {
			out = append(out, fieldRange{nb.Type + "." + name, a.SrcRange})
		}
	}
	slices.SortStableFunc(out, func(a, b fieldRange) int {
		return (b.rng.End.Byte - b.rng.Start.Byte) - (a.rng.End.Byte - a.rng.Start.Byte)
	})
	return out
}

func fieldAt(ranges []fieldRange, subject *hcl.Range) string {
	if subject == nil {
		return ""
	}
	field := ""
	for _, fr := range ranges {
		if fr.rng.ContainsOffset(subject.Start.Byte) {
			field = fr.field
		}
	}
	return field
}

// SpecOf is the definition of a server of the config file, as the admin
// API shows it (secrets included; Split masks them). Durations left unset
// in the file stay unset.
func SpecOf(sc upstream.ServerConfig) ServerSpec {
	dur := func(d time.Duration) string {
		switch {
		case d == 0:
			return ""
		case d < 0:
			return "0" // never
		}
		return d.String()
	}
	transport := sc.Transport
	if transport == "" {
		transport = upstream.TransportStdio // what the file leaves out
	}
	s := ServerSpec{Name: sc.Name, Transport: transport, Command: sc.Command, Args: sc.Args, Env: sc.Env, Cwd: sc.Cwd,
		URL: sc.URL, Headers: sc.Headers, SecretArgs: sc.SecretArgs, SecretURL: sc.SecretURL, Timeout: dur(sc.Timeout), IdleTimeout: dur(sc.IdleTimeout),
		ConnectTimeout: dur(sc.ConnectTimeout), Sessions: sc.Sessions, MaxSessions: sc.MaxSessions, ProtocolVersion: sc.ProtocolVersion}
	if o := sc.OAuth; o != nil {
		s.OAuth = &OAuthSpec{Grant: o.Grant, Mode: o.Mode, ClientID: o.ClientID, ClientSecret: o.ClientSecret, Issuer: o.Issuer,
			Audience: o.Audience, Scopes: o.Scopes, RedirectURL: o.RedirectURL, ClientMetadataURL: o.ClientMetadataURL}
	}
	return s
}

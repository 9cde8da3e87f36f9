package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/host/upstream"
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
// block — it is written out as one, in HCL's JSON syntax, and decoded by
// the same code against the same schema — and returns the host's
// configuration of it. configPath anchors a relative cwd, as in the file.
// Mistakes come back as a *SpecError naming every field at fault.
func (s ServerSpec) Server(configPath string) (upstream.ServerConfig, error) {
	src, err := s.json()
	if err != nil {
		return upstream.ServerConfig{}, &SpecError{Errors: []FieldError{{Detail: "the definition cannot be written as a server block: " + err.Error()}}}
	}
	f, diags := hcljson.Parse(src, "definition.json")
	if diags.HasErrors() {
		// encoding/json wrote it, so this should not happen; if it does,
		// the definition is what to change.
		return upstream.ServerConfig{}, &SpecError{Errors: []FieldError{{Detail: "the definition cannot be written as a server block: " + diags.Error()}}}
	}
	// No functions: JSON strings are templates only where there is an
	// evaluation context, so without one every value is read as written
	// ("${...}" included) and a definition from outside cannot call env()
	// or file().
	return s.decode(configPath, f.Body, nil, jsonFieldRanges)
}

// decode decodes the one server block of body, as `mcphost validate` does,
// with the functions of ctx; ranges says where each field is written.
func (s ServerSpec) decode(configPath string, body hcl.Body, ctx *hcl.EvalContext, ranges func(*hcl.Block) []fieldRange) (upstream.ServerConfig, error) {
	d := &decoder{dir: filepath.Dir(configPath), ctx: ctx, sourceRanges: map[string]hcl.Range{}, commandRanges: map[string]hcl.Range{}, configRanges: map[string]configRange{}}
	content, diags := body.Content(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "server", LabelNames: []string{"name"}}}})
	if diags.HasErrors() || len(content.Blocks) != 1 {
		return upstream.ServerConfig{}, &SpecError{Errors: []FieldError{{Detail: "the definition cannot be written as one server block"}}}
	}
	block := content.Blocks[0]
	sc := d.decodeServer(block)
	var errs []FieldError
	where := ranges(block)
	for _, diag := range d.diags {
		if diag.Severity != hcl.DiagError {
			continue
		}
		errs = append(errs, FieldError{Field: fieldAt(where, diag.Subject), Detail: strings.TrimSpace(diag.Summary + ": " + diag.Detail)})
	}
	if s.Name == "" {
		errs = append(errs, FieldError{Field: "name", Detail: "a server needs a name: letters, digits, '_' or '-'"})
	}
	errs = append(errs, s.checkSecretMarks()...)
	if len(errs) == 0 {
		if err := (gateway.Config{Servers: []upstream.ServerConfig{sc}}).WithDefaults().Validate(); err != nil {
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

// json writes the definition as a server block in HCL's JSON syntax:
// {"server": {NAME: {ARGUMENTS}}}. What is unset is left out; an empty
// list or map is written, as a config file can write one.
func (s ServerSpec) json() ([]byte, error) {
	type oauthBody struct {
		Grant             string    `json:"grant,omitempty"`
		Mode              string    `json:"mode,omitempty"`
		ClientID          string    `json:"client_id,omitempty"`
		ClientSecret      string    `json:"client_secret,omitempty"`
		Issuer            string    `json:"issuer,omitempty"`
		Audience          string    `json:"audience,omitempty"`
		RedirectURL       string    `json:"redirect_url,omitempty"`
		ClientMetadataURL string    `json:"client_metadata_url,omitempty"`
		Scopes            *[]string `json:"scopes,omitempty"`
	}
	type serverBody struct {
		Transport       string             `json:"transport,omitempty"`
		Command         string             `json:"command,omitempty"`
		Args            *[]string          `json:"args,omitempty"`
		Env             *map[string]string `json:"env,omitempty"`
		Cwd             string             `json:"cwd,omitempty"`
		URL             string             `json:"url,omitempty"`
		Headers         *map[string]string `json:"headers,omitempty"`
		Timeout         string             `json:"timeout,omitempty"`
		IdleTimeout     string             `json:"idle_timeout,omitempty"`
		ConnectTimeout  string             `json:"connect_timeout,omitempty"`
		Sessions        string             `json:"sessions,omitempty"`
		MaxSessions     int                `json:"max_sessions,omitempty"`
		ProtocolVersion string             `json:"protocol_version,omitempty"`
		OAuth           *oauthBody         `json:"oauth,omitempty"`
	}
	b := serverBody{Transport: s.Transport, Command: s.Command, Args: set(s.Args), Env: set(s.Env), Cwd: s.Cwd, URL: s.URL,
		Headers: set(s.Headers), Timeout: s.Timeout, IdleTimeout: s.IdleTimeout, ConnectTimeout: s.ConnectTimeout,
		Sessions: s.Sessions, MaxSessions: s.MaxSessions, ProtocolVersion: s.ProtocolVersion}
	if o := s.OAuth; o != nil {
		b.OAuth = &oauthBody{Grant: o.Grant, Mode: o.Mode, ClientID: o.ClientID, ClientSecret: o.ClientSecret, Issuer: o.Issuer,
			Audience: o.Audience, RedirectURL: o.RedirectURL, ClientMetadataURL: o.ClientMetadataURL, Scopes: set(o.Scopes)}
	}
	// A label is read as written, where the text path normalized it to
	// NFC as every string value still is (cty.StringVal): the name in an
	// error is the one the text path showed.
	name := cty.StringVal(s.Name).AsString()
	doc := map[string]map[string]serverBody{"server": {name: b}}
	return json.Marshal(doc)
}

// set points at v unless it is nil, so that omitempty leaves out what is
// unset but writes what is empty.
func set[T []string | map[string]string](v T) *T {
	if v == nil {
		return nil
	}
	return &v
}

// fieldRange is where a field of the written block is.
type fieldRange struct {
	field string
	rng   hcl.Range
}

// jsonFieldRanges lists where each field of a block written by json is,
// innermost last, so the last one that holds a diagnostic's subject names
// it.
func jsonFieldRanges(block *hcl.Block) []fieldRange {
	out := []fieldRange{{"name", block.LabelRanges[0]}}
	attrs, _ := block.Body.JustAttributes() // the oauth block too, as an object
	for name, a := range attrs {
		out = append(out, fieldRange{name, a.Range})
		if name != "oauth" {
			continue
		}
		pairs, _ := hcl.ExprMap(a.Expr)
		for _, kv := range pairs {
			k, diags := kv.Key.Value(nil)
			if diags.HasErrors() || k.Type() != cty.String {
				continue
			}
			out = append(out, fieldRange{"oauth." + k.AsString(), hcl.RangeBetween(kv.Key.Range(), kv.Value.Range())})
		}
	}
	return innermostLast(out)
}

// innermostLast sorts ranges from the longest to the shortest.
func innermostLast(ranges []fieldRange) []fieldRange {
	slices.SortStableFunc(ranges, func(a, b fieldRange) int {
		return (b.rng.End.Byte - b.rng.Start.Byte) - (a.rng.End.Byte - a.rng.Start.Byte)
	})
	return ranges
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

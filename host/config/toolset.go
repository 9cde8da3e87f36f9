package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcphost-project/mcphost/host/toolset"
)

// toolsetSchema is a toolset block: the part of the catalog served at
// /mcp/NAME, and how it is listed.
var toolsetSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "description"},
		{Name: "servers"},
		{Name: "tools"},
		{Name: "exclude"},
		{Name: "exposure"},
		{Name: "always"},
	},
}

// toolsetRef is a server a toolset names, checked once every server is
// known.
type toolsetRef struct {
	toolset, server string
	rng             hcl.Range
}

// decodeToolset decodes a toolset block; its problems are reported at the
// argument they are about (toolset.Toolset.Check, which the admin API's
// toolsets pass too).
func (d *decoder) decodeToolset(block *hcl.Block) (toolset.Toolset, []toolsetRef) {
	content, diags := block.Body.Content(toolsetSchema)
	d.diags = append(d.diags, diags...)
	attrs := content.Attributes
	t := toolset.Toolset{Name: block.Labels[0]}
	if err := toolset.CheckName(t.Name); err != nil {
		d.errorf(block.LabelRanges[0], "Invalid toolset name", "%s.", err)
	}
	var refs []toolsetRef
	if s, ok := d.string(attrs["description"]); ok {
		t.Description = s
	}
	if v, ranges, ok := d.stringList(attrs["servers"]); ok {
		t.Servers = v
		for i, s := range v {
			refs = append(refs, toolsetRef{toolset: t.Name, server: s, rng: ranges[i]})
		}
	}
	for _, f := range []struct {
		name string
		to   *[]string
	}{{"tools", &t.Tools}, {"exclude", &t.Exclude}, {"always", &t.Always}} {
		if v, _, ok := d.stringList(attrs[f.name]); ok {
			*f.to = v
		}
	}
	if v, ok := d.enum(attrs["exposure"], toolset.Exposures...); ok {
		t.Exposure = v
	}
	for _, p := range t.Check() {
		if a := attrs[p.Field]; !d.reported(a) {
			d.errorf(rangeOr(a, block.DefRange), fmt.Sprintf("Invalid toolset %q", t.Name), "%s.", p.Detail)
		}
	}
	return t, refs
}

// checkToolsetServers warns of a toolset's server that no block declares:
// it may be one added at run time through the admin API, or a typo.
func (d *decoder) checkToolsetServers(refs []toolsetRef, servers *nameSet) {
	for _, ref := range refs {
		if !servers.has(ref.server) {
			d.warnf(ref.rng, "Unknown server in toolset",
				"Toolset %q takes the tools of server %q, but no server block has that name.%s It serves them only if a server of that name is added through the admin API.",
				ref.toolset, ref.server, didYouMean(ref.server, servers.names))
		}
	}
}

// ToolsetSpec is a toolset as the admin API reads and writes it: the
// toolset block's arguments under the same names.
type ToolsetSpec struct {
	Description string   `json:"description,omitempty"`
	Servers     []string `json:"servers,omitempty"`
	Tools       []string `json:"tools,omitempty"`
	Exclude     []string `json:"exclude,omitempty"`
	Exposure    string   `json:"exposure,omitempty"`
	Always      []string `json:"always,omitempty"`
}

// DecodeToolsetSpec reads one JSON toolset strictly: unknown fields,
// wrong types and trailing data are a *SpecError (Syntax) naming the
// field.
func DecodeToolsetSpec(data []byte) (ToolsetSpec, error) {
	var s ToolsetSpec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		fe := jsonFieldError(err)
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			f = strings.Trim(f, `"`)
			names := make([]string, len(toolsetSchema.Attributes))
			for i, a := range toolsetSchema.Attributes {
				names[i] = a.Name
			}
			fe = FieldError{Field: f, Detail: fmt.Sprintf("unknown field %q.%s", f, didYouMean(f, names))}
		}
		return ToolsetSpec{}, &SpecError{Syntax: true, Errors: []FieldError{fe}}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return ToolsetSpec{}, &SpecError{Syntax: true, Errors: []FieldError{{Detail: "the body holds more than one JSON value; send one object"}}}
	}
	return s, nil
}

// Toolset checks the definition as a toolset block named name is checked
// and returns it; mistakes come back as a *SpecError naming every field
// at fault.
func (s ToolsetSpec) Toolset(name string) (toolset.Toolset, error) {
	t := toolset.Toolset{Name: name, Description: s.Description, Servers: s.Servers, Tools: s.Tools, Exclude: s.Exclude, Exposure: s.Exposure, Always: s.Always}
	var errs []FieldError
	if err := toolset.CheckName(name); err != nil {
		errs = append(errs, FieldError{Field: "name", Detail: err.Error()})
	}
	for _, p := range t.Check() {
		errs = append(errs, FieldError{Field: p.Field, Detail: p.Detail})
	}
	if len(errs) > 0 {
		return toolset.Toolset{}, &SpecError{Errors: errs}
	}
	return t.WithDefaults(), nil
}

// ToolsetSpecOf is the JSON form of t.
func ToolsetSpecOf(t toolset.Toolset) ToolsetSpec {
	return ToolsetSpec{Description: t.Description, Servers: t.Servers, Tools: t.Tools, Exclude: t.Exclude, Exposure: t.Exposure, Always: t.Always}
}

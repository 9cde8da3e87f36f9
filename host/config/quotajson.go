package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcphost-project/mcphost/host/quota"
)

// QuotaSpec is a quota as the admin API reads and writes it: the quota
// block's arguments under the same names, the window as a duration
// string.
type QuotaSpec struct {
	Subjects   []string `json:"subjects,omitempty"`
	Groups     []string `json:"groups,omitempty"`
	Servers    []string `json:"servers,omitempty"`
	Tools      []string `json:"tools,omitempty"`
	Calls      int      `json:"calls,omitempty"`
	Window     string   `json:"window,omitempty"`
	Concurrent int      `json:"concurrent,omitempty"`
	Per        string   `json:"per,omitempty"`
}

// DecodeQuotaSpec reads one JSON quota strictly: unknown fields, wrong
// types and trailing data are a *SpecError (Syntax) naming the field.
func DecodeQuotaSpec(data []byte) (QuotaSpec, error) {
	var s QuotaSpec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return QuotaSpec{}, &SpecError{Syntax: true, Errors: []FieldError{quotaFieldError(err)}}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return QuotaSpec{}, &SpecError{Syntax: true, Errors: []FieldError{{Detail: "the body holds more than one JSON value; send one object"}}}
	}
	return s, nil
}

// quotaFieldError is jsonFieldError with a quota's names to suggest.
func quotaFieldError(err error) FieldError {
	fe := jsonFieldError(err)
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		f = strings.Trim(f, `"`)
		names := make([]string, len(quotaSchema.Attributes))
		for i, a := range quotaSchema.Attributes {
			names[i] = a.Name
		}
		fe = FieldError{Field: f, Detail: fmt.Sprintf("unknown field %q.%s", f, didYouMean(f, names))}
	}
	return fe
}

// Quota checks the definition as a quota block named name is checked and
// returns it; mistakes come back as a *SpecError naming every field at
// fault.
func (s QuotaSpec) Quota(name string) (quota.Quota, error) {
	q := quota.Quota{Name: name, Subjects: s.Subjects, Groups: s.Groups, Servers: s.Servers, Tools: s.Tools,
		Calls: s.Calls, Concurrent: s.Concurrent, Per: s.Per}
	var errs []FieldError
	if s.Window != "" {
		d, err := time.ParseDuration(s.Window)
		if err != nil {
			errs = append(errs, FieldError{Field: "window", Detail: fmt.Sprintf("%q is not a duration; write a number with a unit: \"30s\", \"5m\" or \"1h\"", s.Window)})
		}
		q.Window = d
	}
	for _, p := range q.Check() {
		if p.Field == "window" && len(errs) > 0 {
			continue
		}
		errs = append(errs, FieldError{Field: p.Field, Detail: p.Detail})
	}
	if len(errs) > 0 {
		return quota.Quota{}, &SpecError{Errors: errs}
	}
	return q.WithDefaults(), nil
}

// QuotaSpecOf is the JSON form of q.
func QuotaSpecOf(q quota.Quota) QuotaSpec {
	s := QuotaSpec{Subjects: q.Subjects, Groups: q.Groups, Servers: q.Servers, Tools: q.Tools,
		Calls: q.Calls, Concurrent: q.Concurrent, Per: q.Per}
	if q.Window > 0 {
		s.Window = q.Window.String()
	}
	return s
}

package policies

import (
	"bytes"
	"encoding/json"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
)

// jsonResults is builtin:json_results: a result whose content is one text
// block holding a JSON object or array, and that has no structuredContent,
// gets that JSON as structuredContent; the text stays for clients that
// read only content. Configuration:
//
//	array_key = "result"  # structuredContent must be an object: an array is
//	                      # wrapped as { "result": [...] }
//	errors    = false     # also convert results with isError set
type jsonResults struct {
	arrayKey string
	errors   bool
}

func newJSONResults() pdk.Policy {
	j := &jsonResults{}
	return pdk.Policy{
		Name:       "json_results",
		Version:    Version,
		Configure:  j.configure,
		ToolResult: j.toolResult,
		// Only a text starting with { or [ can be JSON it would copy.
		Hints: func() abi.Hints { return abi.Hints{ResultTextPrefixes: []string{"{", "["}} },
	}
}

func (j *jsonResults) configure(cfg pdk.ConfigSource) (err error) {
	j.arrayKey = cfg.String("array_key", "result")
	j.errors, err = boolean(cfg, "errors", false)
	return err
}

func (j *jsonResults) toolResult(in *abi.ToolResultInput) (*abi.ToolResultOutput, error) {
	r := in.Result
	if r == nil || (r.IsError && !j.errors) || len(r.Content) != 1 || r.Content[0].Type != "text" {
		return nil, nil
	}
	if s := bytes.TrimSpace(r.StructuredContent); len(s) > 0 && !bytes.Equal(s, []byte("null")) {
		return nil, nil
	}
	text := bytes.TrimSpace([]byte(r.Content[0].Text))
	if len(text) == 0 || (text[0] != '{' && text[0] != '[') || !json.Valid(text) {
		return nil, nil
	}
	if text[0] == '[' {
		text = object{{Key: j.arrayKey, Value: text}}.raw()
	}
	var compact bytes.Buffer
	if json.Compact(&compact, text) == nil {
		text = compact.Bytes()
	}
	r.StructuredContent = text
	return &abi.ToolResultOutput{Result: r}, nil
}

// Package main is jsoncsv, an mcphost tool plugin in Go that turns JSON
// records into CSV and CSV into JSON records: what a model asked for a
// spreadsheet, or handed one, needs done exactly rather than by guesswork.
package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/mcphost-project/mcphost/abi/pdk/tool"
)

// MaxRows bounds both directions.
const MaxRows = 100000

// ToCSVIn is json_to_csv's input.
type ToCSVIn struct {
	JSON      string   `json:"json" jsonschema:"a JSON array of objects, one per row"`
	Columns   []string `json:"columns,omitempty" jsonschema:"the columns, in order (default: every key, in the order first seen)"`
	Delimiter string   `json:"delimiter,omitempty" jsonschema:"one character (default ,)"`
}

// ToCSVOut is json_to_csv's result.
type ToCSVOut struct {
	CSV     string   `json:"csv"`
	Rows    int      `json:"rows" jsonschema:"data rows, the header excluded"`
	Columns []string `json:"columns"`
}

// ToJSONIn is csv_to_json's input.
type ToJSONIn struct {
	CSV       string `json:"csv" jsonschema:"CSV text whose first line names the columns"`
	Delimiter string `json:"delimiter,omitempty" jsonschema:"one character (default ,)"`
}

// ToJSONOut is csv_to_json's result.
type ToJSONOut struct {
	Rows    []map[string]string `json:"rows"`
	Columns []string            `json:"columns"`
}

func delimiter(d string) (rune, error) {
	if d == "" {
		return ',', nil
	}
	r, n := utf8.DecodeRuneInString(d)
	if n != len(d) || r == '"' || r == '\r' || r == '\n' || r == utf8.RuneError {
		return 0, tool.Errorf("delimiter", "must be one character other than a quote or a line break, not %q", d)
	}
	return r, nil
}

// ToCSV is json_to_csv.
func ToCSV(_ *tool.Context, in ToCSVIn) (ToCSVOut, error) {
	comma, err := delimiter(in.Delimiter)
	if err != nil {
		return ToCSVOut{}, err
	}
	dec := json.NewDecoder(strings.NewReader(in.JSON))
	dec.UseNumber()
	var rows []map[string]any
	if err := dec.Decode(&rows); err != nil {
		return ToCSVOut{}, tool.Errorf("json", "must be an array of objects: %v", err)
	}
	if len(rows) > MaxRows {
		return ToCSVOut{}, tool.Errorf("json", "%d rows, more than %d", len(rows), MaxRows)
	}
	cols := in.Columns
	if len(cols) == 0 {
		// Keys in the order first seen: decode again, keeping order.
		if cols, err = keyOrder(in.JSON); err != nil {
			return ToCSVOut{}, tool.Errorf("json", "%v", err)
		}
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Comma = comma
	_ = w.Write(cols)
	rec := make([]string, len(cols))
	for _, row := range rows {
		for i, c := range cols {
			rec[i] = cell(row[c])
		}
		_ = w.Write(rec)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return ToCSVOut{}, err
	}
	return ToCSVOut{CSV: buf.String(), Rows: len(rows), Columns: cols}, nil
}

// cell writes a value as a CSV cell: strings as they are, null as empty,
// numbers and booleans as JSON, arrays and objects as JSON text.
func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// keyOrder returns the keys of the array's objects in the order first seen.
func keyOrder(src string) ([]string, error) {
	dec := json.NewDecoder(strings.NewReader(src))
	seen := map[string]bool{}
	var keys []string
	depth := 0
	expectKey := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return keys, nil
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			expectKey = t == '{' && depth == 2
			continue
		case string:
			if depth == 2 && expectKey {
				if !seen[t] {
					seen[t] = true
					keys = append(keys, t)
				}
				expectKey = false
				if err := skipValue(dec); err != nil {
					return nil, err
				}
				expectKey = true
				continue
			}
		}
	}
}

func skipValue(dec *json.Decoder) error {
	var v json.RawMessage
	return dec.Decode(&v)
}

// ToJSON is csv_to_json.
func ToJSON(_ *tool.Context, in ToJSONIn) (ToJSONOut, error) {
	comma, err := delimiter(in.Delimiter)
	if err != nil {
		return ToJSONOut{}, err
	}
	r := csv.NewReader(strings.NewReader(in.CSV))
	r.Comma = comma
	r.FieldsPerRecord = 0 // every row as long as the header
	header, err := r.Read()
	if err == io.EOF {
		return ToJSONOut{}, tool.Errorf("csv", "is empty: the first line must name the columns")
	}
	if err != nil {
		return ToJSONOut{}, tool.Errorf("csv", "%v", err)
	}
	out := ToJSONOut{Columns: header, Rows: []map[string]string{}}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return ToJSONOut{}, tool.Errorf("csv", "%v", err)
		}
		if len(out.Rows) == MaxRows {
			return ToJSONOut{}, tool.Errorf("csv", "more than %d rows", MaxRows)
		}
		row := make(map[string]string, len(header))
		for i, c := range header {
			row[c] = rec[i]
		}
		out.Rows = append(out.Rows, row)
	}
}

// Plugin is the plugin, registered by register_wasip1.go.
var Plugin = tool.Plugin{Name: "jsoncsv", Version: "1.0.0", Tools: []tool.Tool{
	tool.New("json_to_csv", "Turn a JSON array of objects into CSV, one row per object.", ToCSV,
		tool.Title("JSON to CSV"), tool.ReadOnly(), tool.Idempotent()),
	tool.New("csv_to_json", "Turn CSV whose first line names the columns into JSON records.", ToJSON,
		tool.Title("CSV to JSON"), tool.ReadOnly(), tool.Idempotent()),
}}

func main() {}

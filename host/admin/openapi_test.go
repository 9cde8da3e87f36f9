package admin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// loadOpenAPI parses and validates the embedded document.
func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(OpenAPI)
	if err != nil {
		t.Fatalf("loading openapi.json: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI document: %v", err)
	}
	return doc
}

func TestOpenAPIValid(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	if !strings.HasPrefix(doc.OpenAPI, "3.0.") {
		t.Errorf("openapi = %q, want 3.0.x", doc.OpenAPI)
	}
	if doc.Info.Title != "mcphost admin API" || doc.Info.Version != "1" {
		t.Errorf("info = %q %q, want \"mcphost admin API\" \"1\"", doc.Info.Title, doc.Info.Version)
	}
	if len(doc.Security) == 0 {
		t.Error("no global security requirement")
	}
	if s := doc.Components.SecuritySchemes["bearerAuth"]; s == nil || s.Value.Type != "http" || s.Value.Scheme != "bearer" {
		t.Error("no http bearer security scheme named bearerAuth")
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.OperationID == "" {
				t.Errorf("%s %s has no operationId", method, path)
			}
			for code, r := range op.Responses.Map() {
				if code < "400" {
					continue
				}
				if r.Value.Content.Get("application/problem+json") == nil {
					t.Errorf("%s %s: the %s answer is not application/problem+json", method, path, code)
				}
			}
		}
	}
}

// contractOperations returns the method and path pairs of the table in
// docs/admin-api.md, like "GET /v1/servers/{name}".
func contractOperations(t *testing.T) []string {
	t.Helper()
	md, err := os.ReadFile(filepath.Join("..", "..", "docs", "admin-api.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\|\\s*`(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) (/[^`\\s]*)`\\s*\\|")
	var ops []string
	for _, m := range row.FindAllStringSubmatch(string(md), -1) {
		ops = append(ops, m[1]+" "+m[2])
	}
	if len(ops) < 10 {
		t.Fatalf("found %d operations in the table of docs/admin-api.md; has its format changed?", len(ops))
	}
	return ops
}

// TestOpenAPIMatchesContract checks that the document and the table of
// docs/admin-api.md list the same operations.
func TestOpenAPIMatchesContract(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	want := map[string]bool{}
	for _, op := range contractOperations(t) {
		want[op] = true
		method, path, _ := strings.Cut(op, " ")
		item := doc.Paths.Value(path)
		if item == nil {
			t.Errorf("%s: path %s is not in openapi.json", op, path)
			continue
		}
		if item.GetOperation(method) == nil {
			t.Errorf("%s: method %s of %s is not in openapi.json", op, method, path)
		}
	}
	var extra []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if op := method + " " + path; !want[op] {
				extra = append(extra, op)
			}
		}
	}
	sort.Strings(extra)
	for _, op := range extra {
		t.Errorf("%s is in openapi.json but not in the table of docs/admin-api.md", op)
	}
}

// TestOpenAPIHeaders checks the ETag, Location and If-Match headers of the
// single-server operations.
func TestOpenAPIHeaders(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	op := func(method, path string) *openapi3.Operation {
		t.Helper()
		item := doc.Paths.Value(path)
		if item == nil || item.GetOperation(method) == nil {
			t.Fatalf("no %s %s", method, path)
		}
		return item.GetOperation(method)
	}
	header := func(o *openapi3.Operation, code int, name string) bool {
		r := o.Responses.Status(code)
		return r != nil && r.Value.Headers[name] != nil
	}
	ifMatch := func(o *openapi3.Operation) bool {
		for _, p := range o.Parameters {
			if p.Value.In == openapi3.ParameterInHeader && p.Value.Name == "If-Match" {
				return true
			}
		}
		return false
	}
	const one = "/v1/servers/{name}"
	for _, c := range []struct {
		method, path string
		code         int
	}{
		{"POST", "/v1/servers", 201},
		{"GET", one, 200},
		{"PUT", one, 200},
		{"PUT", one, 201},
		{"PATCH", one, 200},
	} {
		if !header(op(c.method, c.path), c.code, "ETag") {
			t.Errorf("%s %s: no ETag on %d", c.method, c.path, c.code)
		}
	}
	for _, c := range [][2]string{{"POST", "/v1/servers"}, {"PUT", one}} {
		if !header(op(c[0], c[1]), 201, "Location") {
			t.Errorf("%s %s: no Location on 201", c[0], c[1])
		}
	}
	for _, m := range []string{"PUT", "PATCH", "DELETE"} {
		if !ifMatch(op(m, one)) {
			t.Errorf("%s %s takes no If-Match", m, one)
		}
	}
	patch := op("PATCH", one).RequestBody.Value.Content
	if patch.Get("application/merge-patch+json") == nil || patch.Get("application/json") == nil {
		t.Error("PATCH does not take both application/merge-patch+json and application/json")
	}
}

// TestOpenAPISchemas checks the schemas against bodies the contract
// accepts and refuses.
func TestOpenAPISchemas(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	for _, c := range []struct {
		schema, body string
		ok           bool
	}{
		{"ServerDefinition", `{"name": "files", "transport": "stdio", "command": "npx",
			"args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]}`, true},
		{"ServerDefinition", `{"name": "api", "transport": "streamable-http", "url": "https://api.example.com/mcp",
			"headers": {"Authorization": "********"}, "timeout": "30s", "sessions": "per_client", "max_sessions": 4,
			"oauth": {"grant": "client_credentials", "client_id": "mcphost", "client_secret": "s3cret"}}`, true},
		{"ServerDefinition", `{"name": "gh", "command": "gh-mcp", "args": ["--token", "ghp-s3cret"], "secret_args": [1]}`, true},
		{"ServerDefinition", `{"name": "z", "transport": "sse", "url": "https://mcp.example.com/k/s3cret/sse", "secret_url": true}`, true},
		{"ServerDefinition", `{"name": "gh", "args": ["a"], "secret_args": [-1]}`, false},
		{"ServerDefinition", `{"name": "gh", "args": ["a"], "secret_args": ["0"]}`, false},
		{"ServerDefinition", `{"transport": "stdio", "command": "npx"}`, true}, // name may be left out (PUT, :test)
		{"ServerDefinition", `{"name": "files", "comand": "npx"}`, false},      // unknown field
		{"ServerDefinition", `{"name": "a/b", "command": "npx"}`, false},
		{"ServerDefinition", `{"name": "files", "transport": "websocket"}`, false},
		{"ServerDefinition", `{"name": "files", "sessions": "per_user"}`, false},
		{"ServerDefinition", `{"name": "files", "args": "-y"}`, false},
		{"ServerDefinition", `{"name": "files", "timeout": 30}`, false},
		{"ServerDefinition", `{"name": "files", "env": {"N": 1}}`, false},
		{"ServerDefinition", `{"name": "api", "oauth": {"grant": "client_credentials", "scope": "a"}}`, false},
		{"ServerDefinition", `{"name": "api", "oauth": {"mode": "per_user", "scopes": ["repo:read"]}}`, true},
		{"ServerDefinition", `{"name": "api", "oauth": {"mode": "everyone"}}`, false},
		{"ServerPatch", `{"cwd": null, "env": {"OLD": null, "NEW": "x"}, "transport": "sse"}`, true},
		{"ServerPatch", `{"transport": null, "oauth": null, "headers": null}`, true},
		{"ServerPatch", `{"secret_args": null, "secret_url": true}`, true},
		{"ServerPatch", `{"transport": "websocket"}`, false},
		{"ServerPatch", `{"bogus": 1}`, false},
		{"Server", `{"name": "files", "transport": "stdio", "command": "npx", "env": {"API_KEY": "********"},
			"source": "config", "status": {"name": "files", "transport": "stdio", "state": "connected", "tools": 11,
			"since": "2026-11-25T17:00:00Z", "pid": 4242, "reconnects": 0, "inFlight": 0}}`, true},
		{"Server", `{"name": "gh", "command": "gh-mcp", "args": ["--token", "********"], "secret_args": [1], "source": "store"}`, true},
		{"Server", `{"name": "files", "source": "file"}`, false},
		{"TestResult", `{"ok": false, "error": "connecting: EOF", "stage": "connect",
			"stderr": "npm ERR! 404", "timing": {"connectMs": 12.5, "totalMs": 12.6}}`, true},
		{"TestResult", `{"ok": false, "stage": "start", "timing": {}}`, false},
		{"TestResult", `{"ok": true, "tools": [{"description": "no name"}], "timing": {}}`, false},
		{"Tool", `{"name": "files_read", "server": "files", "tool": "read", "exposed": true, "extra": 1}`, true},
		{"Tool", `{"name": "files_read"}`, false},
		{"PluginStatus", `{"name": "pin", "source": "builtin:pin", "state": "loaded", "hooks": ["tools_list"], "calls": 3}`, true},
		{"PluginStatus", `{"source": "builtin:pin"}`, false},
		{"PinApproval", `{"keys": ["files/read_file"]}`, true},
		{"PinApproval", `{"all": true}`, true},
		{"PinApproval", `{"all": false}`, false},
		{"PinApproval", `{"keys": ["files/read_file"], "all": true}`, false},
		{"Problem", `{"type": "about:blank", "title": "Invalid server definition", "status": 422,
			"detail": "command: ...", "errors": [{"field": "command", "detail": "..."}]}`, true},
	} {
		ref := doc.Components.Schemas[c.schema]
		if ref == nil {
			t.Fatalf("no schema %s", c.schema)
		}
		var v any
		if err := json.Unmarshal([]byte(c.body), &v); err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		err := ref.Value.VisitJSON(v)
		if c.ok && err != nil {
			t.Errorf("%s refuses %s: %v", c.schema, c.body, err)
		}
		if !c.ok && err == nil {
			t.Errorf("%s accepts %s", c.schema, c.body)
		}
	}
}

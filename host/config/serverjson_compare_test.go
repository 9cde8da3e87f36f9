package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// definitions are API definitions, good and bad, that reach Server: the
// ones the API refuses before it (unknown fields, wrong JSON types) are
// DecodeServerSpec's, the same for both paths.
var definitions = []string{
	// accepted
	`{"name":"files","transport":"stdio","command":"sh","args":["-c","echo ${HOME} %{x}"],"env":{"API_KEY":"k","Odd-Name":"v"},"cwd":"sub","timeout":"5s","sessions":"per_client","max_sessions":3}`,
	`{"name":"e","command":"sh","args":[],"env":{}}`,
	`{"name":"lit","command":"${env(\"HOME\")}","args":["${file(\"/etc/passwd\")}"],"env":{"K":"${env(\"HOME\")}","${env(\"X\")}":"%{if true}y%{endif}"}}`,
	`{"name":"keys","command":"sh","env":{"for":"1","in":"2","null":"3","a b":"4","q\"uote":"5","back\\slash":"6","é":"7","//":"8"}}`,
	`{"name":"r","transport":"http","url":"https://x.example/mcp?k=v","headers":{"Authorization":"Bearer ${x}"},"idle_timeout":"0","connect_timeout":"3s","protocol_version":"2025-06-18"}`,
	`{"name":"o","transport":"streamable-http","url":"https://x.example/mcp","sessions":"per_client","oauth":{"grant":"client_credentials","client_id":"a","client_secret":"b","scopes":["x"]}}`,
	`{"name":"gh","transport":"streamable-http","url":"https://x.example/mcp","oauth":{"mode":"per_user","scopes":["repo","read:org"],"redirect_url":"https://gw.example/cb","client_metadata_url":"https://gw.example/client.json"}}`,
	`{"name":"tx","transport":"streamable-http","url":"https://x.example/mcp","sessions":"per_client","oauth":{"grant":"token_exchange","client_id":"a","client_secret":"b","issuer":"https://as.example","audience":"api"}}`,
	`{"name":"s","command":"sh","args":["--token","T0K3N"],"secret_args":[1]}`,
	`{"name":"u","transport":"sse","url":"https://x.example/k/S3CR3T/sse","secret_url":true}`,
	`{"name":"//","command":"sh"}`,
	// refused
	`{"name":"a b","command":"sh"}`,
	`{"command":"sh"}`,
	`{"name":"${x}","command":"sh"}`,
	`{"name":"a"}`,
	`{"name":"a","command":""}`,
	`{"name":"a","transport":"stdio","url":"http://x"}`,
	`{"name":"a","url":"http://x"}`,
	`{"name":"a","command":"sh","headers":{"A":"b"},"url":"https://x"}`,
	`{"name":"a","transport":"http","url":"ftp://x"}`,
	`{"name":"a","transport":"http"}`,
	`{"name":"a","transport":"sse","url":"https://x","command":"sh","args":["x"],"env":{"A":"b"},"cwd":"/"}`,
	`{"name":"a","transport":"carrier-pigeon","command":"sh"}`,
	`{"name":"a","transport":"stdo","url":"https://x"}`,
	`{"name":"a","command":"sh","timeout":"soon"}`,
	`{"name":"a","command":"sh","idle_timeout":"-5s","connect_timeout":"1y"}`,
	`{"name":"a","command":"sh","sessions":"per-client"}`,
	`{"name":"a","command":"sh","max_sessions":-1}`,
	`{"name":"a","command":"sh","max_sessions":200000}`,
	`{"name":"a","command":"sh","protocol_version":"latest"}`,
	`{"name":"a","transport":"http","url":"https://x","headers":{"Bad Name":"v","X":"a\nb"}}`,
	`{"name":"a","transport":"http","url":"https://x","oauth":{"grant":"client_credentials","client_id":"c"}}`,
	`{"name":"a","transport":"http","url":"https://x","oauth":{}}`,
	`{"name":"a","transport":"sse","url":"https://x","oauth":{"grant":"client_credentials","client_id":"c","client_secret":"s"}}`,
	`{"name":"a","transport":"http","url":"https://x","oauth":{"grant":"password","client_id":"c","client_secret":"s"}}`,
	`{"name":"a","transport":"http","url":"https://x","oauth":{"mode":"everyone"}}`,
	`{"name":"a","transport":"http","url":"https://x","oauth":{"audience":"api"}}`,
	`{"name":"a","transport":"http","url":"https://x","oauth":{"grant":"token_exchange","client_id":"c","client_secret":"s"}}`,
	`{"name":"a","transport":"http","url":"https://x","oauth":{"grant":"client_credentials","client_id":"c","client_secret":"s","mode":"shared","redirect_url":"https://gw/cb","scopes":["a"]}}`,
	`{"name":"a","transport":"http","url":"https://x","oauth":{"redirect_url":"gw/cb","client_metadata_url":"ftp://m"}}`,
	`{"name":"a","transport":"http","url":"https://x","sessions":"shared","oauth":{"grant":"client_credentials","client_id":"c","client_secret":"s"}}`,
	`{"name":"a","transport":"http","url":"https://x","oauth":{"grant":"token_exchange","client_id":"c","client_secret":"s","issuer":"https://as"}}`,
	`{"name":"a","command":"sh","args":["x"],"secret_args":[1]}`,
	`{"name":"a","command":"sh","args":["x"],"secret_args":[-1]}`,
	`{"name":"a","command":"sh","args":["x"],"secret_args":[0,0]}`,
	`{"name":"a","command":"sh","secret_url":true}`,
	`{"name":"a b","transport":"carrier-pigeon","timeout":"soon","max_sessions":-3,"secret_args":[4],"oauth":{"grant":"x"}}`,
}

// TestServerSpecJSONMatchesText: a definition decoded through HCL's JSON
// syntax gives the server the text path gave, or the same errors, each at
// the same field, with the same words. With -v it prints them.
func TestServerSpecJSONMatchesText(t *testing.T) {
	t.Parallel()
	for _, body := range definitions {
		spec, err := DecodeServerSpec([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		viaJSON, jsonErr := spec.Server("/etc/mcphost/mcphost.hcl")
		viaText, textErr := spec.serverFromText("/etc/mcphost/mcphost.hcl")
		if !reflect.DeepEqual(viaJSON, viaText) {
			t.Errorf("%s:\n json %+v\n text %+v", body, viaJSON, viaText)
		}
		if !reflect.DeepEqual(jsonErr, textErr) {
			t.Errorf("%s:\n json %s\n text %s", body, fieldErrors(jsonErr), fieldErrors(textErr))
		}
		t.Logf("%s\n%s", body, fieldErrors(jsonErr))
	}
}

func fieldErrors(err error) string {
	var se *SpecError
	if !errors.As(err, &se) {
		return fmt.Sprintf("\t%v", err)
	}
	var b strings.Builder
	for _, fe := range se.Errors {
		fmt.Fprintf(&b, "\t%-20s %s\n", fe.Field, fe.Detail)
	}
	return b.String()
}

// BenchmarkServerSpec decodes one definition of each kind both ways.
func BenchmarkServerSpec(b *testing.B) {
	for _, c := range []struct{ name, body string }{
		{"stdio", definitions[0]},
		{"remote", definitions[4]},
		{"oauth", definitions[6]},
		{"refused", definitions[len(definitions)-1]},
	} {
		spec, err := DecodeServerSpec([]byte(c.body))
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range []struct {
			name   string
			server func(ServerSpec, string) (any, error)
		}{
			{"text", func(s ServerSpec, p string) (any, error) { return s.serverFromText(p) }},
			{"json", func(s ServerSpec, p string) (any, error) { return s.Server(p) }},
		} {
			b.Run(c.name+"/"+p.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					p.server(spec, "/etc/mcphost/mcphost.hcl")
				}
			})
		}
	}
}

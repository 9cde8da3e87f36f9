package extensions

import (
	"encoding/json"
	"reflect"
	"testing"
)

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	if s == "" {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestForClients(t *testing.T) {
	for _, tc := range []struct {
		name      string
		upstreams []string
		want      string
	}{
		{"none", []string{"", ""}, ""},
		{"unknown dropped", []string{`{"com.example/x":{}}`}, ""},
		{"one offers: union", []string{"", `{"io.modelcontextprotocol/ui":{}}`}, `{"io.modelcontextprotocol/ui":{}}`},
		{"null settings become an object", []string{`{"io.modelcontextprotocol/ui":null}`}, `{"io.modelcontextprotocol/ui":{}}`},
		{"lists united, first value stands", []string{
			`{"io.modelcontextprotocol/ui":{"mimeTypes":["a"],"v":1,"b":false}}`,
			`{"io.modelcontextprotocol/ui":{"mimeTypes":["b","a"],"v":2,"b":true,"w":3}}`,
		}, `{"io.modelcontextprotocol/ui":{"mimeTypes":["a","b"],"v":1,"b":true,"w":3}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ups []map[string]any
			for _, u := range tc.upstreams {
				ups = append(ups, decode(t, u))
			}
			got, want := ForClients(ups), decode(t, tc.want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ForClients = %v, want %v", got, want)
			}
		})
	}
}

func TestIntersection(t *testing.T) {
	const name = "io.example/whole"
	saved := carried
	t.Cleanup(func() { carried = saved })
	carried = append(append([]Carrier(nil), saved...), Carrier{Name: name, Merge: Intersection})
	both := []map[string]any{{name: map[string]any{}}, {name: map[string]any{}}}
	if got := ForClients(both); got[name] == nil {
		t.Errorf("offered by every upstream: %v", got)
	}
	one := []map[string]any{{name: map[string]any{}}, nil}
	if got := ForClients(one); got[name] != nil {
		t.Errorf("offered by one upstream of two, with Intersection: %v", got)
	}
	// One mcphost implements itself is offered whatever the upstreams do.
	carried[len(carried)-1].Gateway = map[string]any{"own": true}
	if got, _ := ForClients(nil)[name].(map[string]any); got["own"] != true {
		t.Errorf("an extension of the gateway's own, no upstream: %v", got)
	}
	if got, _ := ForClients(one)[name].(map[string]any); got["own"] != true {
		t.Errorf("an extension of the gateway's own, one upstream of two: %v", got)
	}
}

func TestForClientAndShared(t *testing.T) {
	got := ForClient(decode(t, `{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]},"com.example/x":{}}`))
	want := decode(t, `{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}`)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ForClient = %v, want %v", got, want)
	}
	if got := ForClient(decode(t, `{"com.example/x":{}}`)); got != nil {
		t.Errorf("ForClient of an unknown extension = %v, want nil", got)
	}
	sh := Shared()
	if _, ok := sh[UI]; !ok {
		t.Errorf("Shared = %v, want MCP Apps", sh)
	}
	sh[UI].(map[string]any)["mimeTypes"] = "changed"
	if _, ok := Shared()[UI].(map[string]any)["mimeTypes"].([]any); !ok {
		t.Error("changing what Shared returned changed the next answer")
	}
}

func TestURIs(t *testing.T) {
	for _, tc := range []struct{ server, uri, exposed string }{
		{"clock", "ui://get-time/mcp-app.html", "ui://clock/get-time/mcp-app.html"},
		{"clock", "ui://dashboard", "ui://clock/dashboard"},
		{"my server/1", "ui://x/y", "ui://my%20server%2F1/x/y"},
		{"a%41", "ui://x", "ui://a%2541/x"},
		{"clock", "file:///etc/hosts", "file:///etc/hosts"},
	} {
		got := ExposeURI(tc.server, tc.uri)
		if got != tc.exposed {
			t.Errorf("ExposeURI(%q, %q) = %q, want %q", tc.server, tc.uri, got, tc.exposed)
			continue
		}
		server, up, ui := RouteURI(got)
		if !ui {
			if IsUI(tc.uri) {
				t.Errorf("RouteURI(%q): not ui", got)
			}
			continue
		}
		if server != tc.server || up != tc.uri {
			t.Errorf("RouteURI(%q) = %q, %q, want %q, %q", got, server, up, tc.server, tc.uri)
		}
	}
	for _, uri := range []string{"ui://", "ui://nothing", "ui:///x", "ui://%zz/x"} {
		if server, _, ui := RouteURI(uri); !ui || server != "" {
			t.Errorf("RouteURI(%q) = %q, %v: want no server", uri, server, ui)
		}
	}
}

func TestExposeToolMeta(t *testing.T) {
	in := decode(t, `{"ui":{"resourceUri":"ui://get-time/mcp-app.html","visibility":["model","app"]},"ui/resourceUri":"ui://get-time/mcp-app.html","other":1}`)
	before, _ := json.Marshal(in)
	out := ExposeToolMeta("clock", in)
	got, _ := json.Marshal(out)
	want := `{"other":1,"ui":{"resourceUri":"ui://clock/get-time/mcp-app.html","visibility":["model","app"]},"ui/resourceUri":"ui://clock/get-time/mcp-app.html"}`
	if string(got) != want {
		t.Errorf("ExposeToolMeta = %s, want %s", got, want)
	}
	if after, _ := json.Marshal(in); string(after) != string(before) {
		t.Errorf("ExposeToolMeta changed its input: %s", after)
	}
	plain := map[string]any{"x": 1}
	if out := ExposeToolMeta("clock", plain); reflect.ValueOf(out).Pointer() != reflect.ValueOf(plain).Pointer() {
		t.Error("ExposeToolMeta copied a _meta with nothing to rewrite")
	}
}

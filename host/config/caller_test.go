package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/upstream"
)

const callerKeys = `
listen {
  auth {
    key "alice" {
      value      = "alice-key-0123456789"
      subject    = "alice"
      groups     = ["eng", "ops"]
      attributes = { team = "red" }
    }
  }
}
`

// memoryServer is issue 31's example, with every kind of template.
const memoryServer = `
server "memory" {
  command = "npx"
  args    = ["-y", "server-memory", "--user", caller.subject]
  env     = { MEMORY_FILE_PATH = "/var/lib/mcphost/memory/${caller.subject}.jsonl", TEAM = caller.attributes.team, HOME = "/home" }
  cwd     = "work/${caller.attributes.team}"
}
`

// TestCallerTemplates: a server's settings that use caller load with
// placeholders (what status and logs show), default to per-client
// sessions, and are filled in per caller by Apply; the server's own
// session gets empty values.
func TestCallerTemplates(t *testing.T) {
	f, diags := Parse([]byte(callerKeys+memoryServer), "/etc/mcphost/t.hcl")
	if diags.HasErrors() {
		t.Fatal(diags.Err().Error())
	}
	s := f.Host.Servers[0]
	if s.Caller == nil {
		t.Fatal("no caller template")
	}
	if want := "/var/lib/mcphost/memory/${caller.subject}.jsonl"; s.Env["MEMORY_FILE_PATH"] != want || s.Args[3] != "${caller.subject}" {
		t.Errorf("as loaded: env %v, args %v; want the templates", s.Env, s.Args)
	}
	if s.WithDefaults().Sessions != upstream.SessionsPerClient {
		t.Errorf("sessions default to %q", s.WithDefaults().Sessions)
	}
	got, err := s.Caller.Apply(s, &auth.Identity{Subject: "alice", Groups: []string{"eng"}, Attributes: map[string]string{"team": "red"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Env["MEMORY_FILE_PATH"] != "/var/lib/mcphost/memory/alice.jsonl" || got.Env["TEAM"] != "red" || got.Env["HOME"] != "/home" ||
		!slices.Equal(got.Args, []string{"-y", "server-memory", "--user", "alice"}) || got.Cwd != "/etc/mcphost/work/red" || got.Command != "npx" {
		t.Errorf("for alice: %+v", got)
	}
	if s.Env["MEMORY_FILE_PATH"] != "/var/lib/mcphost/memory/${caller.subject}.jsonl" {
		t.Error("Apply changed the template's own settings")
	}
	own, err := s.Caller.Apply(s, nil, nil)
	if err != nil || own.Env["MEMORY_FILE_PATH"] != "/var/lib/mcphost/memory/.jsonl" {
		t.Errorf("the server's own session: %v, %v", own.Env, err)
	}
	if _, err := s.Caller.Apply(s, &auth.Identity{Subject: "bob"}, nil); err == nil || !strings.Contains(err.Error(), `attribute "team"`) {
		t.Errorf("a caller without the attribute: %v", err)
	}
	// A reload keeps the server when the template is the same, and
	// replaces it when it changed.
	f2, _ := Parse([]byte(callerKeys+memoryServer), "/etc/mcphost/t.hcl")
	if !upstream.Same(s, f2.Host.Servers[0]) {
		t.Error("the same template reads as changed")
	}
	f3, _ := Parse([]byte(callerKeys+strings.Replace(memoryServer, "/var/lib/mcphost/memory/", "/srv/", 1)), "/etc/mcphost/t.hcl")
	if upstream.Same(s, f3.Host.Servers[0]) {
		t.Error("a changed template reads as the same")
	}
}

// TestCallerTemplateErrors: every misuse is an error at the place, with
// the fix.
func TestCallerTemplateErrors(t *testing.T) {
	for _, c := range []struct {
		name, src, want string
	}{
		{"unknown attribute", callerKeys + `server "m" {
  command = "x"
  env     = { T = caller.attributes.tem }
}`, `reads caller.attributes.tem, which no caller has. Did you mean "team"?`},
		{"unknown field", callerKeys + `server "m" {
  command = "x"
  args    = [caller.subjet]
}`, `caller has no field "subjet". Did you mean "subject"?`},
		{"secrets without a store", callerKeys + `server "m" {
  command = "x"
  env     = { T = caller.secrets.github }
}`, "callers' secrets are kept in the store: add a store block"},
		{"secrets without a store key", callerKeys + `store {
  sqlite = "state.db"
}
server "m" {
  command = "x"
  env     = { T = caller.secrets.github }
}`, "give the store block a key"},
		{"secret name", callerKeys + storeWithKey + `server "m" {
  command = "x"
  env     = { T = caller.secrets["git-hub"] }
}`, `"git-hub" cannot name a caller's secret`},
		{"secrets alone", callerKeys + storeWithKey + `server "m" {
  command = "x"
  env     = { T = caller.secrets }
}`, "caller.secrets needs the name"},
		{"secret on a shared server", callerKeys + storeWithKey + `server "m" {
  command  = "x"
  sessions = "shared"
  env      = { T = caller.secrets.github }
}`, `remove sessions = "shared"`},
		{"shared", callerKeys + `server "m" {
  command  = "x"
  sessions = "shared"
  env      = { T = caller.subject }
}`, `remove sessions = "shared"`},
		{"not a templated attribute", callerKeys + `server "m" {
  command = "x"
  timeout = caller.subject
}`, `timeout cannot use the caller's values`},
		{"no callers", `server "m" {
  command = "x"
  env     = { T = caller.subject }
}`, "add listen.auth"},
		{"caller alone", callerKeys + `server "m" {
  command = "x"
  env     = { T = caller }
}`, "caller alone is not a value"},
		{"oauth url", callerKeys + `server "m" {
  transport = "streamable-http"
  url       = "https://example.com/${caller.subject}/mcp"
  oauth {
    grant = "client_credentials"
    client_id = "c"
    client_secret = "s"
  }
}`, "the url cannot differ per caller"},
		{"outside a server", callerKeys + `runtime {
  cache_dir = caller.subject
}`, "Variables not allowed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, diags := Parse([]byte(c.src), "t.hcl")
			if !diags.HasErrors() || !strings.Contains(strings.Join(strings.Fields(diags.Err().Error()), " "), c.want) {
				t.Errorf("got %v\nwant an error with %q", diags.Err().Error(), c.want)
			}
		})
	}
}

// TestCallerAttributeOfRuntimeUsers: with a store, users added at run time
// may have attributes the file does not name, so reading one is a warning
// there, not an error.
func TestCallerAttributeOfRuntimeUsers(t *testing.T) {
	f, diags := Parse([]byte(callerKeys+`store {
  sqlite = "state.db"
}
server "m" {
  command = "x"
  env     = { T = caller.attributes.region }
}`), "t.hcl")
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	var warned bool
	for _, d := range diags.List {
		warned = warned || d.Summary == "Unknown caller attribute"
	}
	if !warned || f.Host.Servers[0].Caller == nil {
		t.Errorf("warned %v, template %v", warned, f.Host.Servers[0].Caller)
	}
}

// storeWithKey is a store that can keep callers' secrets.
const storeWithKey = `
store {
  sqlite = "state.db"
  key    = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="
}
`

// TestCallerSecretTemplates: caller.secrets.NAME loads as its placeholder
// (what status shows), is named by Secrets, and Apply fills in the
// caller's value, refusing a caller who has not given it.
func TestCallerSecretTemplates(t *testing.T) {
	f, diags := Parse([]byte(callerKeys+storeWithKey+`server "gh" {
  command = "gh-mcp"
  args    = ["--token-file", "/run/${caller.subject}"]
  env     = { GITHUB_TOKEN = caller.secrets.GITHUB_TOKEN, TEAM = caller.attributes.team }
}`), "/etc/mcphost/t.hcl")
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	s := f.Host.Servers[0]
	if s.Caller == nil || !slices.Equal(s.Caller.Secrets(), []string{"GITHUB_TOKEN"}) {
		t.Fatalf("secrets read: %v", s.Caller)
	}
	if s.Env["GITHUB_TOKEN"] != "${caller.secrets.GITHUB_TOKEN}" || !strings.Contains(s.Caller.String(), "${caller.secrets.GITHUB_TOKEN}") {
		t.Errorf("as loaded: %v; shown %q", s.Env, s.Caller.String())
	}
	alice := &auth.Identity{Subject: "alice", Attributes: map[string]string{"team": "red"}}
	got, err := s.Caller.Apply(s, alice, map[string]string{"GITHUB_TOKEN": "ghp_alice"})
	if err != nil || got.Env["GITHUB_TOKEN"] != "ghp_alice" || got.Env["TEAM"] != "red" {
		t.Fatalf("for alice: %v %v", got.Env, err)
	}
	if s.Env["GITHUB_TOKEN"] != "${caller.secrets.GITHUB_TOKEN}" {
		t.Error("Apply changed the template's own settings")
	}
	if _, err := s.Caller.Apply(s, alice, nil); err == nil || !strings.Contains(err.Error(), `secret "GITHUB_TOKEN"`) {
		t.Errorf("a caller without the secret: %v", err)
	}
	if own, err := s.Caller.Apply(s, nil, nil); err != nil || own.Env["GITHUB_TOKEN"] != "" {
		t.Errorf("the server's own session: %v %v", own.Env, err)
	}
}

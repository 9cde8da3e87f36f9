package config

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"
)

func TestAuthBlock(t *testing.T) {
	t.Setenv("CI_BOT_KEY", "ci-bot-key-0123456789")
	sum := sha256.Sum256([]byte("alice-key-0123456789"))
	src := `
listen {
  http = "0.0.0.0:7700"
  auth {
    admin_groups = ["ops"]
    stdio_key    = "alice"
    key "alice" {
      sha256     = "sha256:` + hex.EncodeToString(sum[:]) + `"
      subject    = "alice"
      groups     = ["eng", "ops"]
      attributes = { team = "core" }
    }
    key "ci-bot" {
      value   = env("CI_BOT_KEY")
      subject = "ci-bot"
    }
    oauth {
      issuer        = "https://idp.example.com/realms/main"
      audience      = "https://mcp.example.com/mcp"
      scopes        = ["mcp:tools"]
      subject_claim = "email"
      groups_claim  = "roles"
      attributes    = { tenant = "tid" }
      clock_skew    = "10s"
    }
  }
}
`
	f, diags := Parse([]byte(src), "t.hcl")
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	var text strings.Builder
	diags.WriteText(&text, 0, false)
	if strings.Contains(text.String(), "without a token") {
		t.Errorf("warned of no token with an auth block:\n%s", text.String())
	}
	a := f.Host.Listen.Auth
	if a == nil || len(a.Keys) != 2 || a.OAuth == nil || a.StdioKey != "alice" || a.AdminGroups[0] != "ops" {
		t.Fatalf("auth = %+v", a)
	}
	if k := a.Keys[0]; k.SHA256 != sum || k.Subject != "alice" || len(k.Groups) != 2 || k.Attributes["team"] != "core" {
		t.Errorf("key alice = %+v", k)
	}
	if k := a.Keys[1]; k.SHA256 != sha256.Sum256([]byte("ci-bot-key-0123456789")) {
		t.Errorf("key ci-bot is not the hash of its value")
	}
	o := a.OAuth
	if o.SubjectClaim != "email" || o.GroupsClaim != "roles" || o.Attributes["tenant"] != "tid" || o.ClockSkew != 10*time.Second || o.Scopes[0] != "mcp:tools" {
		t.Errorf("oauth = %+v", o)
	}
	if id := a.StdioIdentity(); id == nil || id.Subject != "alice" || id.Method != "config" {
		t.Errorf("stdio identity = %+v", id)
	}
}

func TestAuthBlockErrors(t *testing.T) {
	t.Setenv("SHORT", "abc")
	for _, tc := range []struct{ body, want string }{
		{`key "a" {
subject = "a"
}`, "needs sha256"},
		{`key "a" {
value = "0123456789abcdefgh"
}`, "needs subject"},
		{`key "a" {
value = "0123456789abcdefgh"
		            sha256 = "00"
		            subject = "a"
}`, "Both sha256 and value"},
		{`key "a" {
sha256 = "abc"
		            subject = "a"
}`, "not a SHA-256 digest"},
		{`key "a" {
value = env("SHORT")
		            subject = "a"
}`, "at least 16"},
		{`key "a" {
value = "0123456789abcdefgh"
		            subject = "a"
}
		  key "b" {
value = "0123456789abcdefgh"
		            subject = "b"
}`, "same key"},
		{`key "a" {
value = "0123456789abcdefgh"
		            subject = "a"
}
		  stdio_key = "nobody"`, "names no key block"},
		{``, "needs at least one key block or an oauth block"},
		{`oauth {
issuer = "idp.example.com"
		          audience = "x"
}`, "not an https URL"},
		{`oauth {
issuer = "http://idp.example.com"
audience = "x"
}`, "plain http"},
		{`oauth {
issuer = "https://idp.example.com"
}`, "audience"},
		{`oauth {
issuer = "https://idp.example.com"
		          audience = "x"
		          algorithms = ["HS256"]
}`, "never are"},
		{`kye "a" {}`, "Did you mean \"key\"?"},
	} {
		_, diags := Parse([]byte("listen {\n  auth {\n    "+tc.body+"\n  }\n}\n"), "t.hcl")
		var text strings.Builder
		diags.WriteText(&text, 0, false)
		if !diags.HasErrors() || !strings.Contains(text.String(), tc.want) {
			t.Errorf("%s:\n%s\nwant an error with %q", tc.body, text.String(), tc.want)
		}
	}
}

func TestServerOAuthBlock(t *testing.T) {
	t.Setenv("GH_SECRET", "s3cret-value-0123")
	f, diags := Parse([]byte(`
server "gh" {
  transport = "streamable-http"
  url       = "https://mcp.example.com/mcp"
  oauth {
    grant         = "client_credentials"
    client_id     = "mcphost"
    client_secret = env("GH_SECRET")
    issuer        = "https://idp.example.com"
  }
}
`), "t.hcl")
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	o := f.Host.Servers[0].OAuth
	if o == nil || o.Grant != "client_credentials" || o.ClientID != "mcphost" || o.ClientSecret != "s3cret-value-0123" || o.Issuer != "https://idp.example.com" {
		t.Fatalf("oauth = %+v", o)
	}
	login, diags := Parse([]byte("server \"s\" {\ntransport = \"streamable-http\"\nurl = \"https://x.example/mcp\"\noauth {\nmode = \"shared\"\nscopes = [\"repo:read\"]\nredirect_url = \"http://127.0.0.1:7700/oauth/callback\"\n}\n}\n"), "t.hcl")
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	if o := login.Host.Servers[0].OAuth; o.Grant != "" || o.Mode != "shared" || o.Scopes[0] != "repo:read" || o.RedirectURL == "" {
		t.Fatalf("login oauth = %+v", o)
	}
	for _, tc := range []struct{ body, want string }{
		{"transport = \"streamable-http\"\nurl = \"https://x.example/mcp\"\noauth {\nmode = \"shared\"\ngrant = \"client_credentials\"\nclient_id = \"a\"\nclient_secret = \"b\"\n}", "mode is for logins"},
		{"transport = \"streamable-http\"\nurl = \"https://x.example/mcp\"\noauth {\nmode = \"peruser\"\n}", "Invalid mode"},
		{"transport = \"streamable-http\"\nurl = \"https://x.example/mcp\"\noauth {\naudience = \"x\"\n}", "audience is for token exchange"},
		{"transport = \"streamable-http\"\nurl = \"https://x.example/mcp\"\noauth {\ngrant = \"token_exchange\"\nclient_id = \"a\"\nclient_secret = \"b\"\n}", "Missing issuer"},
		{"transport = \"streamable-http\"\nurl = \"https://x.example/mcp\"\noauth {\ngrant = \"token_exchange\"\nissuer = \"https://i\"\nclient_id = \"a\"\nclient_secret = \"b\"\nredirect_url = \"https://r\"\n}", "redirect_url is for logins"},
		{"transport = \"streamable-http\"\nurl = \"https://x.example/mcp\"\noauth {\nredirect_url = \"ftp://x\"\n}", "Invalid url"},
		{"transport = \"streamable-http\"\nurl = \"https://x.example/mcp\"\noauth {\ngrant = \"client_credentials\"\n}", "Missing client credentials"},
		{"transport = \"sse\"\nurl = \"https://x.example/sse\"\noauth {\ngrant = \"client_credentials\"\nclient_id = \"a\"\nclient_secret = \"b\"\n}", "OAuth needs streamable-http"},
	} {
		_, diags := Parse([]byte("server \"s\" {\n"+tc.body+"\n}\n"), "t.hcl")
		var text strings.Builder
		diags.WriteText(&text, 0, false)
		if !diags.HasErrors() || !strings.Contains(text.String(), tc.want) {
			t.Errorf("%s:\n%s\nwant %q", tc.body, text.String(), tc.want)
		}
	}
}

// TestGrantsWhere: a config whose servers log in keeps their grants in
// the grants block's file; without one, in the store when it has a key
// (replicas share them there), else in the default file beside the config.
func TestGrantsWhere(t *testing.T) {
	t.Parallel()
	const login = "server \"gh\" {\ntransport = \"streamable-http\"\nurl = \"https://x.example/mcp\"\noauth {\nmode = \"per_user\"\n}\n}\n"
	key := `"` + strings.Repeat("A", 43) + `="`
	for _, tc := range []struct {
		name, extra string
		store       bool
		file        string
	}{
		{"default file", "", false, DefaultGrantsFile},
		{"store without key", "store {}\n", false, DefaultGrantsFile},
		{"store with key", "store {\nkey = " + key + "\n}\n", true, ""},
		{"grants block wins", "store {\nkey = " + key + "\n}\ngrants {\nfile = \"g.json\"\n}\n", false, "g.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file, diags := Parse([]byte(login+tc.extra), "/etc/mcphost/t.hcl")
			if diags.HasErrors() {
				t.Fatal(diags.Err())
			}
			g := file.Grants
			if g == nil || g.Store != tc.store || (tc.file != "" && !strings.HasSuffix(g.File, "/"+tc.file)) || (tc.file == "" && g.File != "") {
				t.Fatalf("grants %+v", g)
			}
		})
	}
}

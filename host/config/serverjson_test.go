package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/upstream"
)

func specErr(t *testing.T, err error) *config.SpecError {
	t.Helper()
	var se *config.SpecError
	if !errors.As(err, &se) {
		t.Fatalf("want a *SpecError, got %v", err)
	}
	return se
}

func TestServerSpecDecodesLikeTheFile(t *testing.T) {
	t.Parallel()
	cfgPath := filepath.Join(t.TempDir(), "mcphost.hcl")
	spec, err := config.DecodeServerSpec([]byte(`{"name":"files","transport":"stdio","command":"sh","args":["-c","echo ${HOME} %{x}"],
		"env":{"API_KEY":"k","Odd-Name":"v"},"cwd":"sub","timeout":"5s","sessions":"per_client","max_sessions":3}`))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := spec.Server(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	want := upstream.ServerConfig{Name: "files", Transport: "stdio", Command: "sh", Args: []string{"-c", "echo ${HOME} %{x}"},
		Env: map[string]string{"API_KEY": "k", "Odd-Name": "v"}, Cwd: filepath.Join(filepath.Dir(cfgPath), "sub"),
		Timeout: 5e9, Sessions: "per_client", MaxSessions: 3}
	if sc.Name != want.Name || sc.Command != want.Command || strings.Join(sc.Args, "|") != strings.Join(want.Args, "|") ||
		sc.Env["Odd-Name"] != "v" || sc.Cwd != want.Cwd || sc.Timeout != want.Timeout || sc.MaxSessions != 3 {
		t.Fatalf("got %+v\nwant %+v", sc, want)
	}
}

// TestServerSpecCallsNoFunction: a definition from outside is read as
// written; env() and file() in it read nothing of this machine.
func TestServerSpecCallsNoFunction(t *testing.T) {
	t.Setenv("MCPHOST_TEST_SECRET", "S3CR3T")
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte("F1L3"), 0o600); err != nil {
		t.Fatal(err)
	}
	env, file := `${env("MCPHOST_TEST_SECRET")}`, fmt.Sprintf(`${file(%q)}`, secretFile)
	spec := config.ServerSpec{Name: "n", Command: env, Args: []string{file, "%{ if true }x%{ endif }"},
		Env: map[string]string{env: file}, Cwd: env}
	sc, err := spec.Server(filepath.Join(t.TempDir(), "mcphost.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Command != env || sc.Args[0] != file || sc.Args[1] != spec.Args[1] || sc.Env[env] != file || filepath.Base(sc.Cwd) != env {
		t.Fatalf("not read as written: %+v", sc)
	}
	if got := fmt.Sprintf("%+v", sc); strings.Contains(got, "S3CR3T") || strings.Contains(got, "F1L3") {
		t.Fatalf("a function was called: %s", got)
	}
}

func TestServerSpecErrorsNameTheField(t *testing.T) {
	t.Parallel()
	cases := []struct {
		json, field, says string
		syntax            bool
	}{
		{`{"name":"a","comand":"x"}`, "comand", `Did you mean "command"`, true},
		{`{"name":"a","args":"x"}`, "args", "expected an array", true},
		{`{"name":"a","max_sessions":"3"}`, "max_sessions", "expected an integer", true},
		{`{"name":"a"} {}`, "", "more than one JSON value", true},
		{`{"name":`, "", "ends early", true},
		{``, "", "empty", true},
		{`{"name":"a b","command":"sh"}`, "name", "Invalid server name", false},
		{`{"name":"a","transport":"stdio","url":"http://x"}`, "url", "not used by stdio", false},
		{`{"name":"a","transport":"http","url":"ftp://x"}`, "url", "Invalid url", false},
		{`{"name":"a","transport":"carrier-pigeon","command":"sh"}`, "transport", "", false},
		{`{"name":"a","command":"sh","timeout":"soon"}`, "timeout", "", false},
		{`{"name":"a","command":"no-such-program-mcphost"}`, "command", "no program", false},
		{`{"name":"a","transport":"http","url":"https://x","oauth":{"grant":"client_credentials","client_id":"c"}}`, "oauth", "client_secret", false},
		{`{"command":"sh"}`, "name", "", false},
		{`{"name":"a","command":"sh","args":["x"],"secret_args":[1]}`, "secret_args", "there are 1 args", false},
		{`{"name":"a","command":"sh","args":["x"],"secret_args":[-1]}`, "secret_args", "not the position", false},
		{`{"name":"a","command":"sh","args":["x"],"secret_args":[0,0]}`, "secret_args", "listed twice", false},
		{`{"name":"a","command":"sh","secret_url":true}`, "secret_url", "no url", false},
		{`{"name":"a","command":"sh","args":["x"],"secret_args":"0"}`, "secret_args", "expected an array", true},
	}
	for _, c := range cases {
		spec, err := config.DecodeServerSpec([]byte(c.json))
		if err == nil {
			var sc upstream.ServerConfig
			if sc, err = spec.Server("/etc/mcphost.hcl"); err == nil {
				err = config.CheckCommand(sc)
			}
		}
		if err == nil {
			t.Errorf("%s: accepted", c.json)
			continue
		}
		se := specErr(t, err)
		if se.Syntax != c.syntax {
			t.Errorf("%s: Syntax = %v", c.json, se.Syntax)
		}
		found := false
		for _, fe := range se.Errors {
			if fe.Field == c.field && strings.Contains(fe.Detail, c.says) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: want field %q saying %q, got %+v", c.json, c.field, c.says, se.Errors)
		}
	}
}

func TestSpecSecretsMaskAndKeep(t *testing.T) {
	t.Parallel()
	spec := config.ServerSpec{Name: "gh", Command: "sh", Env: map[string]string{"TOKEN": "t0"},
		Headers: nil, OAuth: &config.OAuthSpec{ClientSecret: "cs"}}
	pub, sec := spec.Split()
	if pub.Env["TOKEN"] != config.Masked || pub.OAuth.ClientSecret != config.Masked || sec.Env["TOKEN"] != "t0" || sec.ClientSecret != "cs" {
		t.Fatalf("split: %+v %+v", pub, sec)
	}
	if spec.Env["TOKEN"] != "t0" {
		t.Fatal("Split changed its receiver")
	}
	back, err := pub.Keep(&pub, sec)
	if err != nil || back.Env["TOKEN"] != "t0" || back.OAuth.ClientSecret != "cs" {
		t.Fatalf("keep: %+v %v", back, err)
	}
	pub.Env["NEW"] = config.Masked
	if _, err := pub.Keep(&pub, sec); err == nil || specErr(t, err).Errors[0].Field != "env.NEW" {
		t.Fatalf("masked value with nothing stored: %v", err)
	}
}

// TestServerSpecOddMapKeys: env and header names that are HCL keywords or
// not identifiers at all come through as they are, alone or together,
// not as a render failure.
func TestServerSpecOddMapKeys(t *testing.T) {
	t.Parallel()
	keys := []string{"for", "if", "in", "null", "true", "a b", "${x}", "%{y}", `q"uote`, "back\\slash", "1digit", "é"}
	all := map[string]string{}
	for _, k := range keys {
		all[k] = "v-" + k
		spec := config.ServerSpec{Name: "odd", Command: "sh", Env: map[string]string{k: "v-" + k}}
		if sc, err := spec.Server("/etc/mcphost.hcl"); err != nil || sc.Env[k] != "v-"+k || len(sc.Env) != 1 {
			t.Errorf("env key %q: %v %v", k, sc.Env, err)
		}
		remote := config.ServerSpec{Name: "odd", Transport: "http", URL: "https://x.example/mcp", Headers: map[string]string{k: "v"}}
		if sc, err := remote.Server("/etc/mcphost.hcl"); err != nil {
			specErr(t, err) // a header name HTTP refuses is the definition's mistake
		} else if sc.Headers[k] != "v" {
			t.Errorf("header %q: %v", k, sc.Headers)
		}
	}
	sc, err := config.ServerSpec{Name: "odd", Command: "sh", Env: all}.Server("/etc/mcphost.hcl")
	if err != nil || len(sc.Env) != len(all) {
		t.Fatalf("all keys: %v %v", sc.Env, err)
	}
	for k, v := range all {
		if sc.Env[k] != v {
			t.Errorf("env[%q] = %q, want %q", k, sc.Env[k], v)
		}
	}
}

// TestSpecSecretsURL: a URL's userinfo, query and fragment are kept with
// the secrets and shown masked; the masked URL sent back keeps the stored
// one, and any other URL holding "********" is refused.
func TestSpecSecretsURL(t *testing.T) {
	t.Parallel()
	cases := []struct{ url, masked string }{
		{"https://x.example/mcp?api_key=SECRET&v=2", "https://x.example/mcp?api_key=********&v=********"},
		{"https://user:SECRET@x.example/mcp", "https://********@x.example/mcp"},
		{"https://SECRET@x.example:8443/a/b", "https://********@x.example:8443/a/b"},
		{"https://x.example/mcp?SECRET", "https://x.example/mcp?********"},
		{"https://x.example/mcp#token=SECRET", "https://x.example/mcp#token=********"},
	}
	for _, c := range cases {
		spec := config.ServerSpec{Name: "r", Transport: "http", URL: c.url}
		pub, sec := spec.Split()
		if pub.URL != c.masked || sec.URL != c.url || sec.Empty() {
			t.Errorf("split %q: shown %q, kept %q", c.url, pub.URL, sec.URL)
			continue
		}
		if again, _ := pub.Split(); again.URL != c.masked {
			t.Errorf("masking %q twice: %q", c.url, again.URL)
		}
		if back, err := pub.Keep(&pub, sec); err != nil || back.URL != c.url {
			t.Errorf("keep %q: %q %v", c.url, back.URL, err)
		}
		if pub.Join(sec).URL != c.url {
			t.Errorf("join %q: %q", c.url, pub.Join(sec).URL)
		}
		// Masked, but not as returned (another host), or with nothing stored.
		moved := pub
		moved.URL = strings.Replace(pub.URL, "x.example", "evil.example", 1)
		if _, err := moved.Keep(&pub, sec); err == nil || specErr(t, err).Errors[0].Field != "url" {
			t.Errorf("masked URL on another host kept: %v", err)
		}
		if _, err := pub.Keep(nil, config.SpecSecrets{}); err == nil || specErr(t, err).Errors[0].Field != "url" {
			t.Errorf("masked URL with nothing stored kept: %v", err)
		}
	}
	plain := config.ServerSpec{Name: "r", Transport: "http", URL: "https://x.example/mcp"}
	if pub, sec := plain.Split(); pub.URL != plain.URL || !sec.Empty() {
		t.Errorf("a URL without credentials: %q %+v", pub.URL, sec)
	}
}

// TestSpecSecretArgs: the args that secret_args lists are kept with the
// secrets and shown masked; "********" sent back at a listed position
// keeps the stored arg, and anywhere else (a position no longer listed,
// nothing stored there) is refused.
func TestSpecSecretArgs(t *testing.T) {
	t.Parallel()
	spec := config.ServerSpec{Name: "gh", Command: "sh", Args: []string{"--token", "T0K3N", "--db", "postgres://u:pw@db/x"}, SecretArgs: []int{1, 3}}
	pub, sec := spec.Split()
	wantPub := []string{"--token", config.Masked, "--db", config.Masked}
	if !slices.Equal(pub.Args, wantPub) || sec.Args[1] != "T0K3N" || sec.Args[3] != "postgres://u:pw@db/x" || len(sec.Args) != 2 {
		t.Fatalf("split: shown %q, kept %v", pub.Args, sec.Args)
	}
	if spec.Args[1] != "T0K3N" {
		t.Fatal("Split changed its receiver")
	}
	if again, _ := pub.Split(); !slices.Equal(again.Args, wantPub) {
		t.Errorf("masking twice: %q", again.Args)
	}
	back, err := pub.Keep(&pub, sec)
	if err != nil || !slices.Equal(back.Args, spec.Args) {
		t.Fatalf("keep: %q %v", back.Args, err)
	}
	if _, err := back.Server("/etc/mcphost.hcl"); err != nil {
		t.Fatalf("the kept definition: %v", err)
	}
	// A new value at a listed position replaces the stored one.
	changed := pub
	changed.Args = []string{"--token", "N3W", "--db", config.Masked}
	if back, err := changed.Keep(&pub, sec); err != nil || back.Args[1] != "N3W" || back.Args[3] != "postgres://u:pw@db/x" {
		t.Fatalf("keep with a new value: %q %v", back.Args, err)
	}
	for _, c := range []struct {
		name   string
		spec   config.ServerSpec
		stored config.SpecSecrets
	}{
		{"position taken off secret_args", config.ServerSpec{Name: "gh", Command: "sh", Args: pub.Args, SecretArgs: []int{3}}, sec},
		{"nothing stored at the position", config.ServerSpec{Name: "gh", Command: "sh", Args: []string{config.Masked, "x"}, SecretArgs: []int{0}}, sec},
		{"a new definition", pub, config.SpecSecrets{}},
		{"not listed at all", config.ServerSpec{Name: "gh", Command: "sh", Args: []string{config.Masked}}, config.SpecSecrets{}},
	} {
		if _, err := c.spec.Keep(&pub, c.stored); err == nil || specErr(t, err).Errors[0].Field != "args" {
			t.Errorf("%s: masked arg kept: %v", c.name, err)
		}
	}
	if pub, sec := (config.ServerSpec{Name: "gh", Command: "sh", Args: []string{"a"}}).Split(); !sec.Empty() || pub.Args[0] != "a" {
		t.Errorf("args without secret_args: %q %+v", pub.Args, sec)
	}
}

// TestSpecSecretURLPath: secret_url keeps the whole URL with the secrets
// and shows its path masked as well; the URL sent back masked, with or
// without its path masked, keeps the stored one.
func TestSpecSecretURLPath(t *testing.T) {
	t.Parallel()
	cases := []struct{ url, masked string }{
		{"https://x.example/k/SECRET/mcp", "https://x.example/********"},
		{"https://x.example/SECRET?api_key=K", "https://x.example/********?api_key=********"},
		{"https://u:p@x.example:8443/SECRET", "https://********@x.example:8443/********"},
		{"https://x.example", "https://x.example"},
		{"https://x.example/", "https://x.example/"},
	}
	for _, c := range cases {
		spec := config.ServerSpec{Name: "r", Transport: "http", URL: c.url, SecretURL: true}
		pub, sec := spec.Split()
		if pub.URL != c.masked || sec.URL != c.url || !pub.SecretURL {
			t.Errorf("split %q: shown %q, kept %q", c.url, pub.URL, sec.URL)
			continue
		}
		if again, _ := pub.Split(); again.URL != c.masked {
			t.Errorf("masking %q twice: %q", c.url, again.URL)
		}
		if back, err := pub.Keep(&pub, sec); err != nil || back.URL != c.url {
			t.Errorf("keep %q: %q %v", c.url, back.URL, err)
		}
		if strings.Contains(pub.URL, config.Masked) {
			if _, err := pub.Keep(nil, config.SpecSecrets{}); err == nil || specErr(t, err).Errors[0].Field != "url" {
				t.Errorf("masked URL %q with nothing stored kept: %v", pub.URL, err)
			}
			moved := pub
			moved.URL = strings.Replace(pub.URL, "x.example", "evil.example", 1)
			if _, err := moved.Keep(&pub, sec); err == nil {
				t.Errorf("masked URL on another host kept: %q", moved.URL)
			}
		}
	}
	// Turning secret_url on for a URL shown with only its query masked.
	spec := config.ServerSpec{Name: "r", Transport: "http", URL: "https://x.example/SECRET?k=v"}
	pub, sec := spec.Split()
	pub.SecretURL = true
	back, err := pub.Keep(&pub, sec)
	if err != nil || back.URL != spec.URL {
		t.Fatalf("secret_url turned on: %q %v", back.URL, err)
	}
	if again, _ := back.Split(); again.URL != "https://x.example/********?k=********" {
		t.Errorf("after secret_url is on: shown %q", again.URL)
	}
}

// TestSpecSecretsStayWithTheirOrigin: a header or client secret sent back
// masked is kept only while the URL's scheme, host and port stay (and,
// for the client secret, the issuer): pointed elsewhere, each is refused
// by name until it is sent again.
func TestSpecSecretsStayWithTheirOrigin(t *testing.T) {
	t.Parallel()
	stored := config.ServerSpec{Name: "r", Transport: "streamable-http", URL: "https://x.example/mcp",
		Headers: map[string]string{"Authorization": "Bearer S3CR3T", "X-Team": "T34M"},
		OAuth:   &config.OAuthSpec{Grant: "client_credentials", ClientID: "id", ClientSecret: "CL13NT", Issuer: "https://as.example"}}
	pub, sec := stored.Split()
	edit := func(url, issuer string, headers map[string]string, clientSecret string) config.ServerSpec {
		s := pub
		s.URL, s.Headers = url, headers
		o := *pub.OAuth
		o.Issuer, o.ClientSecret = issuer, clientSecret
		s.OAuth = &o
		return s
	}
	masked := map[string]string{"Authorization": config.Masked, "X-Team": config.Masked}
	for _, c := range []struct {
		name, url, issuer string
		headers           map[string]string
		clientSecret      string
		refused           []string // the fields named, in order; none: kept
	}{
		{"unchanged", "https://x.example/mcp", "https://as.example", masked, config.Masked, nil},
		{"another path", "https://x.example/v2/mcp", "https://as.example", masked, config.Masked, nil},
		{"the default port written", "https://x.example:443/mcp", "https://as.example", masked, config.Masked, nil},
		{"upper case", "HTTPS://X.EXAMPLE/mcp", "https://as.example/", masked, config.Masked, nil},
		{"another host", "https://evil.example/mcp", "https://as.example", masked, config.Masked,
			[]string{"headers.Authorization", "headers.X-Team", "oauth.client_secret"}},
		{"another port", "https://x.example:8443/mcp", "https://as.example", masked, config.Masked,
			[]string{"headers.Authorization", "headers.X-Team", "oauth.client_secret"}},
		{"another scheme", "http://x.example/mcp", "https://as.example", masked, config.Masked,
			[]string{"headers.Authorization", "headers.X-Team", "oauth.client_secret"}},
		{"a subdomain", "https://x.example.evil.example/mcp", "https://as.example", masked, config.Masked,
			[]string{"headers.Authorization", "headers.X-Team", "oauth.client_secret"}},
		{"userinfo before the host", "https://x.example@evil.example/mcp", "https://as.example", masked, config.Masked,
			[]string{"headers.Authorization", "headers.X-Team", "oauth.client_secret"}},
		{"another host, one header sent again", "https://evil.example/mcp", "https://as.example",
			map[string]string{"Authorization": "Bearer N3W", "X-Team": config.Masked}, "N3W-CL13NT", []string{"headers.X-Team"}},
		{"another host, every secret sent again", "https://evil.example/mcp", "https://as.example",
			map[string]string{"Authorization": "Bearer N3W"}, "N3W-CL13NT", nil},
		{"another issuer", "https://x.example/mcp", "https://evil.example", masked, config.Masked, []string{"oauth.client_secret"}},
		{"the issuer dropped", "https://x.example/mcp", "", masked, config.Masked, []string{"oauth.client_secret"}},
		{"another issuer, the client secret sent again", "https://x.example/mcp", "https://evil.example", masked, "N3W-CL13NT", nil},
	} {
		next := edit(c.url, c.issuer, c.headers, c.clientSecret)
		got, err := next.Keep(&pub, sec)
		if c.refused == nil {
			if err != nil {
				t.Errorf("%s: refused: %v", c.name, err)
				continue
			}
			for k, v := range c.headers {
				want := v
				if v == config.Masked {
					want = stored.Headers[k]
				}
				if got.Headers[k] != want {
					t.Errorf("%s: header %s = %q, want %q", c.name, k, got.Headers[k], want)
				}
			}
			if want := stored.OAuth.ClientSecret; c.clientSecret == config.Masked && got.OAuth.ClientSecret != want {
				t.Errorf("%s: client secret %q, want the stored one", c.name, got.OAuth.ClientSecret)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: kept, sending the stored secrets to %q (issuer %q): %+v", c.name, got.URL, got.OAuth.Issuer, got.Headers)
			continue
		}
		se := specErr(t, err)
		var fields []string
		for _, fe := range se.Errors {
			fields = append(fields, fe.Field)
			for _, s := range []string{"S3CR3T", "T34M", "CL13NT"} {
				if strings.Contains(fe.Detail, s) {
					t.Errorf("%s: the error quotes a secret: %q", c.name, fe.Detail)
				}
			}
			if !strings.Contains(fe.Detail, "send the value again") {
				t.Errorf("%s: %s: the error does not say what to do: %q", c.name, fe.Field, fe.Detail)
			}
		}
		if !slices.Equal(fields, c.refused) {
			t.Errorf("%s: refused %q, want %q (%v)", c.name, fields, c.refused, err)
		}
	}

	// Loopback names are hosts too: 127.0.0.1 and localhost are two.
	local := config.ServerSpec{Name: "l", Transport: "http", URL: "http://127.0.0.1:7000/mcp", Headers: map[string]string{"K": "V4LU3"}}
	lpub, lsec := local.Split()
	moved := lpub
	moved.URL = "http://localhost:7000/mcp"
	if _, err := moved.Keep(&lpub, lsec); err == nil || specErr(t, err).Errors[0].Field != "headers.K" {
		t.Errorf("127.0.0.1 to localhost: %v", err)
	}
	moved.URL = "http://127.0.0.1:7001/mcp"
	if _, err := moved.Keep(&lpub, lsec); err == nil {
		t.Error("another loopback port kept the header")
	}
	// With nothing before it, a definition keeps nothing and moves nothing.
	if _, err := lpub.Keep(nil, config.SpecSecrets{}); err == nil || specErr(t, err).Errors[0].Field != "headers.K" {
		t.Errorf("a new definition kept a masked header: %v", err)
	}
}

// TestServerSpecOAuthLogin: a JSON definition carries the whole oauth
// block (a per_user login with scopes), and SpecOf writes it back.
func TestServerSpecOAuthLogin(t *testing.T) {
	t.Parallel()
	spec, err := config.DecodeServerSpec([]byte(`{"name":"gh","transport":"streamable-http","url":"https://x.example/mcp",
		"oauth":{"mode":"per_user","scopes":["repo","read:org"],"redirect_url":"https://gw.example/oauth/callback"}}`))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := spec.Server(filepath.Join(t.TempDir(), "mcphost.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	o := sc.OAuth
	if o == nil || o.Mode != upstream.OAuthPerUser || strings.Join(o.Scopes, " ") != "repo read:org" || o.RedirectURL != "https://gw.example/oauth/callback" {
		t.Fatalf("oauth %+v", o)
	}
	back := config.SpecOf(sc)
	if back.OAuth == nil || back.OAuth.Mode != "per_user" || len(back.OAuth.Scopes) != 2 {
		t.Fatalf("written back: %+v", back.OAuth)
	}
}

package secrets

import (
	"strings"
	"testing"
)

func TestMask(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		secret   string // must not survive
		keep     string // must survive
	}{
		{"url password", "connect postgres://admin:hunter2pass@db.internal:5432/app failed", "hunter2pass", "postgres://admin:"},
		{"url password with colon", "dial redis://:p4ss:word@cache:6379", "p4ss:word", "@cache:6379"},
		{"key=value", "DB_PASSWORD=correct-horse-battery exit 1", "correct-horse-battery", "DB_PASSWORD="},
		{"query token", "GET https://api.example.com/v1?access_token=abcdef123456&x=1", "abcdef123456", "&x=1"},
		{"json pair", `{"client_secret": "s3cr3tvalue", "id": 1}`, "s3cr3tvalue", `"id": 1`},
		{"colon pair", "api-key: zzzzzzzzzzzz", "zzzzzzzzzzzz", "api-key:"},
		{"bearer", "Authorization: Bearer abc.def.ghi-123456", "abc.def.ghi-123456", ""},
		{"openai", "key sk-proj-AAAAAAAAAAAAAAAAAAAAAAAA here", "sk-proj-AAAAAAAAAAAAAAAAAAAAAAAA", " here"},
		{"github", "ghp_" + strings.Repeat("a", 36), "ghp_" + strings.Repeat("a", 36), ""},
		{"aws", "id AKIAABCDEFGHIJKLMNOP", "AKIAABCDEFGHIJKLMNOP", "id "},
		{"pem", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "MIIEow", ""},
		{"pem cut", "key: -----BEGIN PRIVATE KEY-----\nMIIEow", "MIIEow", ""},
		{"clean", "listening on stdio", "", "listening on stdio"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := Mask(tc.in)
			if tc.secret != "" && strings.Contains(out, tc.secret) {
				t.Errorf("Mask(%q) = %q: the secret survived", tc.in, out)
			}
			if !strings.Contains(out, tc.keep) {
				t.Errorf("Mask(%q) = %q: want %q kept", tc.in, out, tc.keep)
			}
		})
	}
}

func TestLineMasker(t *testing.T) {
	t.Parallel()
	var m LineMasker
	lines := []string{"starting", "-----BEGIN OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjE", "-----END OPENSSH PRIVATE KEY-----", "after"}
	var out []string
	for _, l := range lines {
		out = append(out, m.Line(l))
	}
	joined := strings.Join(out, "\n")
	if strings.Contains(joined, "b3BlbnNzaC1rZXktdjE") {
		t.Errorf("key body survived: %q", joined)
	}
	if out[0] != "starting" || out[4] != "after" {
		t.Errorf("lines around the key changed: %q", out)
	}
}

// plantedSecrets are credentials of each kind Mask knows, as they would
// appear on their own (after a space or at the start of a line).
var plantedSecrets = []struct{ before, secret string }{
	{"", "ghp_" + strings.Repeat("Z", 40)},
	{"", "sk-ant-" + strings.Repeat("q", 30)},
	{"", "AKIA" + "QWERTYUIOPASDFGH"},
	{"", "xoxb-1234567890-abcdef"},
	{"postgres://user:", "Pa55w0rdX@"},
	{"password=", "Pa55w0rdY"},
	{"Bearer ", "tok_1234567890abcdef"},
}

// FuzzMask puts a known secret into fuzzed text: Mask must not panic and
// the secret must not survive, whatever surrounds it.
func FuzzMask(f *testing.F) {
	f.Add("error: ", " at line 3", uint8(0))
	f.Add("DATABASE_URL=", "\n", uint8(4))
	f.Add("-----BEGIN PRIVATE KEY-----\n", "", uint8(1))
	f.Add("{\"token\": \"", "\"}", uint8(5))
	f.Add("sk-", "sk-", uint8(2))
	f.Fuzz(func(t *testing.T, prefix, suffix string, which uint8) {
		p := plantedSecrets[int(which)%len(plantedSecrets)]
		in := prefix + " " + p.before + p.secret + " " + suffix
		out := Mask(in)
		if strings.Contains(out, strings.TrimSuffix(p.secret, "@")) {
			t.Fatalf("Mask(%q) = %q: the secret survived", in, out)
		}
		var m LineMasker
		for _, l := range strings.Split(in, "\n") {
			_ = m.Line(l)
		}
	})
}

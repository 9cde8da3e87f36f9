package secrets

import (
	"strings"
	"testing"
)

func TestMaskURLs(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"no url here", "no url here"},
		{"http://127.0.0.1:9/mcp", "http://127.0.0.1:9/mcp"},
		{"http://u:pw@h/x", "http://u:xxxxx@h/x"},
		{"http://u@h/x", "http://u@h/x"},
		{`Post "http://h/mcp?token=SECRET": dial tcp`, `Post "http://h/mcp?token=xxxxx": dial tcp`},
		{"https://h/?a=1&Access_Token=S&b=2", "https://h/?a=1&Access_Token=xxxxx&b=2"},
		{"https://h/?API_KEY=S&apikey=S&key=S&Sig=S&signature=S&code=S&auth=S&secret=S&password=S&monkey=ok",
			"https://h/?API_KEY=xxxxx&apikey=xxxxx&key=xxxxx&Sig=xxxxx&signature=xxxxx&code=xxxxx&auth=xxxxx&secret=xxxxx&password=xxxxx&monkey=ok"},
		{"https://s3/x?X-Amz-Credential=C&X-Amz-Signature=S&X-Amz-Expires=60", "https://s3/x?X-Amz-Credential=xxxxx&X-Amz-Signature=xxxxx&X-Amz-Expires=60"},
		{"https://h/cb#access_token=S&state=1", "https://h/cb#access_token=xxxxx&state=1"},
		{`{"error":"Get \"http://h/sse?x=1\u0026token=S\": EOF"}`, `{"error":"Get \"http://h/sse?x=1\u0026token=xxxxx\": EOF"}`},
		{"a http://h/?token=A b https://u:p@h2/?client_secret=B", "a http://h/?token=xxxxx b https://u:xxxxx@h2/?client_secret=xxxxx"},
		{"://x?token=1", "://x?token=1"},
		{"http://h/?token", "http://h/?token"},
		{"http://h/?tok%5Fen=1&access%5Ftoken=S", "http://h/?tok%5Fen=1&access%5Ftoken=xxxxx"},
		{"http://h/?%74oken=S&access_key=S&Subscription-Key=S&x.key=S&monkey=ok&keys=ok", "http://h/?%74oken=xxxxx&access_key=xxxxx&Subscription-Key=xxxxx&x.key=xxxxx&monkey=ok&keys=ok"},
	}
	for _, tt := range tests {
		if got := MaskURLs(tt.in); got != tt.want {
			t.Errorf("MaskURLs(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

func FuzzMaskURLs(f *testing.F) {
	for _, s := range []string{"http://u:p@h/?token=S", `x "https://h/?a=b\u0026key=S" y`, "://?#&", "a://b@c:d@e/?#"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := MaskURLs(s)
		if !strings.Contains(s, "://") && out != s {
			t.Fatalf("changed text without a URL: %q -> %q", s, out)
		}
		if again := MaskURLs(out); again != out {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, out, again)
		}
	})
}

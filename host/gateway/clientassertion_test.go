package gateway

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/authtest"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// ecKeyPEM makes a P-256 key and returns its PEM (PKCS #8) and public JWK.
func ecKeyPEM(t *testing.T) (string, *jose.JSONWebKey) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), &jose.JSONWebKey{Key: &k.PublicKey, Algorithm: "ES256"}
}

// TestUpstreamPrivateKeyJWT: the client_credentials grant authenticates
// with a signed assertion (private_key_jwt, RFC 7523) against a real
// authorization server that checks its signature, iss, sub, aud and jti;
// a key the server does not know leaves the server failed.
func TestUpstreamPrivateKeyJWT(t *testing.T) {
	as := authtest.New(t)
	url := protectedServer(t, as)
	pemKey, pub := ecKeyPEM(t)
	as.AddClient("mcphost-jwt", authtest.Client{AssertionKey: pub, Subject: "svc:jwt", Audience: url})

	h := startHost(t, Config{Servers: []upstream.ServerConfig{{Name: "p", Transport: upstream.TransportStreamableHTTP, URL: url,
		OAuth: &upstream.UpstreamOAuth{Grant: upstream.GrantClientCredentials, ClientID: "mcphost-jwt", ClientAssertionKey: pemKey}}}}, nil)
	got, isErr := callText(t, connectHTTP(t, h, nil), "p__whoami", nil)
	if isErr || !strings.Contains(got, "svc:jwt") {
		t.Fatalf("p__whoami = %q (isError %v)", got, isErr)
	}
	if n := as.TokenRequests("client_credentials"); n != 1 {
		t.Errorf("%d token requests, want 1", n)
	}

	other, _ := ecKeyPEM(t)
	bad := startHost(t, Config{Servers: []upstream.ServerConfig{{Name: "p", Transport: upstream.TransportStreamableHTTP, URL: url, ConnectTimeout: 5 * time.Second,
		OAuth: &upstream.UpstreamOAuth{Grant: upstream.GrantClientCredentials, ClientID: "mcphost-jwt", ClientAssertionKey: other}}}}, nil)
	testproc.WaitFor(t, "the server to fail", 15*time.Second, func() bool { return bad.Statuses()[0].State == upstream.StateFailed })
	if st := bad.Statuses()[0]; !strings.Contains(st.Error, "client_assertion signature") || strings.Contains(st.Error, "PRIVATE KEY") {
		t.Errorf("status error %q", st.Error)
	}
}

// TestClientAssertionKeyChecks: what Validate says of a bad key.
func TestClientAssertionKeyChecks(t *testing.T) {
	pemKey, _ := ecKeyPEM(t)
	for _, tc := range []struct {
		o    upstream.UpstreamOAuth
		want string
	}{
		{upstream.UpstreamOAuth{Grant: upstream.GrantClientCredentials, ClientID: "a", ClientAssertionKey: "not pem"}, "not a PEM private key"},
		{upstream.UpstreamOAuth{Grant: upstream.GrantClientCredentials, ClientID: "a", ClientAssertionKey: pemKey, ClientAssertionAlg: "RS256"}, "does not fit the key"},
		{upstream.UpstreamOAuth{Grant: upstream.GrantClientCredentials, ClientID: "a", ClientSecret: "s", ClientAssertionKey: pemKey}, "no secret"},
		{upstream.UpstreamOAuth{Grant: upstream.GrantClientCredentials, ClientID: "a", ClientAssertionKey: pemKey}, ""},
	} {
		err := upstream.CheckOAuth(&tc.o)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: %v, want %q", tc.want, err, tc.want)
		}
	}
}

// FuzzParseClientKey: whatever the config holds, reading the key errs or
// gives a signer; it never panics.
func FuzzParseClientKey(f *testing.F) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	f.Add(string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), "")
	f.Add("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n", "ES256")
	f.Add("-----BEGIN RSA PRIVATE KEY-----\n\n-----END RSA PRIVATE KEY-----\n", "RS256")
	f.Fuzz(func(t *testing.T, text, alg string) {
		s, a, err := upstream.ParseClientKey(text, alg)
		if err == nil && (s == nil || a == "") {
			t.Fatal("no error and no signer")
		}
	})
}

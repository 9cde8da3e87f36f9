package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The README's "every block and argument" example loads without a
// diagnostic, given what it asks of its surroundings: the environment
// variables it reads, and the certificate and plugin files it names.
func TestREADMEExampleLoads(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)HCL\\. Every block and argument:\n\n```hcl\n(.*?)\n```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no \"Every block and argument\" example")
	}
	example := m[1]
	dir := t.TempDir()
	path := filepath.Join(dir, "config.hcl")
	if err := os.WriteFile(path, example, 0o644); err != nil {
		t.Fatal(err)
	}
	// A 32-byte base64 value does for every variable: tokens, secrets,
	// and the keys that must be 32 bytes.
	value := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	for _, v := range regexp.MustCompile(`env\("([A-Z0-9_]+)"\)`).FindAllSubmatch(example, -1) {
		t.Setenv(string(v[1]), value)
	}
	wasm, err := os.ReadFile(filepath.Join("testdata", "valid", "policies", "no-destructive.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range regexp.MustCompile(`source\s*=\s*"(\./[^"]+\.wasm)"`).FindAllSubmatch(example, -1) {
		writeFile(t, filepath.Join(dir, string(v[1])), wasm)
	}
	cert, key := selfSigned(t)
	for _, v := range regexp.MustCompile(`tls_(cert|key)\s*=\s*"([^"]+)"`).FindAllSubmatch(example, -1) {
		data := cert
		if string(v[1]) == "key" {
			data = key
		}
		writeFile(t, filepath.Join(dir, string(v[2])), data)
	}
	_, diags := Load(path)
	if len(diags.List) > 0 {
		var b strings.Builder
		_ = diags.WriteText(&b, 100, false)
		t.Fatalf("the README's example does not load:\n%s", b.String())
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// selfSigned returns a PEM certificate for localhost and its key.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

package gateway

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// selfSigned writes a certificate for 127.0.0.1 named cn, and its key, to
// dir/cert.pem and dir/key.pem (replacing them, as a renewal does), and
// returns the certificate.
func selfSigned(t *testing.T, dir, cn string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	// Written aside and renamed, as tools that renew certificates do.
	for name, block := range map[string]*pem.Block{"cert.pem": {Type: "CERTIFICATE", Bytes: der}, "key.pem": {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		tmp := filepath.Join(dir, name+".tmp")
		if err := os.WriteFile(tmp, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// TestTLSListener serves MCP over HTTPS with listen.tls_cert and tls_key,
// and picks up a replaced certificate without a restart.
func TestTLSListener(t *testing.T) {
	dir := t.TempDir()
	first := selfSigned(t, dir, "first")
	cfg := Config{Servers: []upstream.ServerConfig{stdioServer("a")}}
	cfg.Listen.TLSCert, cfg.Listen.TLSKey = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	h := startHost(t, cfg, nil)
	addr := testproc.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- h.ListenAndServe(ctx, addr, nil) }()
	t.Cleanup(func() { cancel(); <-served })

	roots := x509.NewCertPool()
	roots.AddCert(first)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true}}
	peer := func() string {
		resp, err := client.Get("https://" + addr + "/healthz")
		if err != nil {
			return "error: " + err.Error()
		}
		resp.Body.Close()
		return resp.TLS.PeerCertificates[0].Subject.CommonName
	}
	testproc.WaitFor(t, "the HTTPS listener", 10*time.Second, func() bool { return peer() == "first" })

	c := mcp.NewClient(&mcp.Implementation{Name: "tls-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "https://" + addr + "/mcp", HTTPClient: client}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__echo", Arguments: map[string]any{"text": "over tls"}})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "over tls" {
		t.Fatalf("a call over TLS: %v %+v", err, res)
	}
	cs.Close()

	// Renewed in place: new handshakes get the new certificate.
	roots.AddCert(selfSigned(t, dir, "second"))
	testproc.WaitFor(t, "the renewed certificate", 10*time.Second, func() bool { return peer() == "second" })
}

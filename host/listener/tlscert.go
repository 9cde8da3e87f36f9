package listener

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// certReloader serves the listener's certificate from files that an
// operator (or certbot, or a secret mount) replaces in place: a handshake
// after the files changed gets the new pair, with no restart. A pair that
// does not load keeps the previous one serving, with a warning.
type certReloader struct {
	certFile, keyFile string
	log               hclog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   string    // the files' sizes and mtimes when cert was loaded
	checked time.Time // last stat of the files
}

// certCheckEvery bounds how often handshakes stat the files.
const certCheckEvery = time.Second

func NewCertReloader(certFile, keyFile string, log hclog.Logger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, log: log}
	stamp, err := r.fileStamp()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading the TLS certificate %s and key %s: %w", certFile, keyFile, err)
	}
	r.cert, r.stamp, r.checked = &cert, stamp, time.Now()
	return r, nil
}

func (r *certReloader) fileStamp() (string, error) {
	var stamp string
	for _, f := range []string{r.certFile, r.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return "", err
		}
		stamp += fmt.Sprintf("%d.%d;", fi.Size(), fi.ModTime().UnixNano())
	}
	return stamp, nil
}

// GetCertificate is tls.Config.GetCertificate.
func (r *certReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) < certCheckEvery {
		return r.cert, nil
	}
	r.checked = time.Now()
	stamp, err := r.fileStamp()
	if err != nil || stamp == r.stamp {
		return r.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		// Half-written (the certificate replaced before the key): the next
		// check, a second on, tries again.
		r.log.Warn("the TLS certificate files changed but do not load; serving the previous certificate", "cert", r.certFile, "key", r.keyFile, "error", err)
		return r.cert, nil
	}
	r.cert, r.stamp = &cert, stamp
	r.log.Info("TLS certificate reloaded", "cert", r.certFile)
	return r.cert, nil
}

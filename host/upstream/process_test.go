package upstream

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// An upstream's stderr is kept and logged masked: servers print their
// configuration, secrets included, when they fail.
func TestTailWriterMasks(t *testing.T) {
	t.Parallel()
	var logged strings.Builder
	log := hclog.New(&hclog.LoggerOptions{Output: &logged, Level: hclog.Debug})
	w := newTailWriter(log, 8)
	w.Write([]byte("dsn postgres://app:S3cretPw@db/app\nkey:\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----\ntoken=abcdef123456 done\n"))
	tail := w.Tail()
	for _, secret := range []string{"S3cretPw", "MIIEvQIBADANBg", "abcdef123456"} {
		if strings.Contains(tail, secret) || strings.Contains(logged.String(), secret) {
			t.Errorf("%q survived:\ntail: %s\nlog: %s", secret, tail, logged.String())
		}
	}
	if !strings.Contains(tail, "postgres://app:") || !strings.Contains(tail, "done") {
		t.Errorf("too much masked: %s", tail)
	}
}

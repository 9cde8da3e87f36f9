// Package seal encrypts the secrets mcphost keeps at rest (the run-time
// store's secrets, the OAuth grants file) with AES-256-GCM under a key the
// operator gives, bound to additional data that names what is sealed, so a
// sealed value moved elsewhere does not open.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length of a key: AES-256.
const KeySize = 32

// Errors of Open, for callers to say what was being opened.
var (
	ErrFormat   = errors.New("unknown format")
	ErrDamaged  = errors.New("damaged")
	ErrWrongKey = errors.New("does not open with this key")
)

const prefix = "v1:"

// Sealer seals and opens with one key.
type Sealer struct{ aead cipher.AEAD }

// New returns the sealer of key; nil for a nil key (nothing can be sealed).
func New(key []byte) (*Sealer, error) {
	if key == nil {
		return nil, nil
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("the key is %d bytes; it must be %d (generate one with: head -c 32 /dev/urandom | base64)", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// ParseKey decodes a key written as base64 (standard or URL alphabet,
// padded or not).
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != KeySize {
				return nil, fmt.Errorf("the key decodes to %d bytes; it must be %d (generate one with: head -c 32 /dev/urandom | base64)", len(b), KeySize)
			}
			return b, nil
		}
	}
	return nil, errors.New("the key is not base64 (generate one with: head -c 32 /dev/urandom | base64)")
}

// Seal encrypts plain for aad, as text.
func (s *Sealer) Seal(plain []byte, aad string) (string, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return prefix + base64.StdEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, []byte(aad))), nil
}

// Open decrypts what Seal made for aad.
func (s *Sealer) Open(sealed, aad string) ([]byte, error) {
	raw, ok := strings.CutPrefix(sealed, prefix)
	if !ok {
		return nil, ErrFormat
	}
	b, err := base64.StdEncoding.DecodeString(raw)
	n := s.aead.NonceSize()
	if err != nil || len(b) < n {
		return nil, ErrDamaged
	}
	plain, err := s.aead.Open(nil, b[:n], b[n:], []byte(aad))
	if err != nil {
		return nil, ErrWrongKey
	}
	return plain, nil
}

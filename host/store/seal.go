package store

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length of a store key: AES-256.
const KeySize = 32

// sealer encrypts secrets with AES-256-GCM. The server's name is the
// additional data, so a sealed value copied onto another row does not
// open.
type sealer struct{ aead cipher.AEAD }

const sealedPrefix = "v1:"

func newSealer(key []byte) (*sealer, error) {
	if key == nil {
		return nil, nil
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("store: the key is %d bytes; it must be %d (generate one with: head -c 32 /dev/urandom | base64)", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead}, nil
}

// ParseKey decodes a store key written as base64 (standard or URL
// alphabet, padded or not).
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != KeySize {
				return nil, fmt.Errorf("the store key decodes to %d bytes; it must be %d (generate one with: head -c 32 /dev/urandom | base64)", len(b), KeySize)
			}
			return b, nil
		}
	}
	return nil, errors.New("the store key is not base64 (generate one with: head -c 32 /dev/urandom | base64)")
}

func (s *sealer) close(plain []byte, name string) (string, error) {
	if s == nil {
		return "", ErrNoKey
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := s.aead.Seal(nonce, nonce, plain, []byte(name))
	return sealedPrefix + base64.StdEncoding.EncodeToString(out), nil
}

func (s *sealer) open(sealed, name string) ([]byte, error) {
	if s == nil {
		return nil, fmt.Errorf("its secrets are encrypted and %w", ErrNoKey)
	}
	raw, ok := strings.CutPrefix(sealed, sealedPrefix)
	if !ok {
		return nil, errors.New("its secrets are in an unknown format")
	}
	b, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(b) < s.aead.NonceSize() {
		return nil, errors.New("its secrets are damaged")
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, b[:n], b[n:], []byte(name))
	if err != nil {
		return nil, errors.New("its secrets do not open with this key (was the store key changed?)")
	}
	return plain, nil
}

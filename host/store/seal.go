package store

import (
	"errors"
	"fmt"

	"github.com/mcphost-project/mcphost/internal/seal"
)

// KeySize is the length of a store key: AES-256.
const KeySize = seal.KeySize

// ParseKey decodes a store key written as base64 (standard or URL
// alphabet, padded or not).
func ParseKey(s string) ([]byte, error) { return seal.ParseKey(s) }

// sealer seals a server's secrets with the store key (internal/seal); the
// server's name is the additional data, so a sealed value copied onto
// another row does not open. nil: the store has no key.
type sealer struct{ s *seal.Sealer }

func newSealer(key []byte) (*sealer, error) {
	s, err := seal.New(key)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if s == nil {
		return nil, nil
	}
	return &sealer{s: s}, nil
}

func (s *sealer) close(plain []byte, name string) (string, error) {
	if s == nil {
		return "", ErrNoKey
	}
	return s.s.Seal(plain, name)
}

func (s *sealer) open(sealed, name string) ([]byte, error) {
	if s == nil {
		return nil, fmt.Errorf("its secrets are encrypted and %w", ErrNoKey)
	}
	plain, err := s.s.Open(sealed, name)
	switch {
	case errors.Is(err, seal.ErrFormat):
		return nil, errors.New("its secrets are in an unknown format")
	case errors.Is(err, seal.ErrDamaged):
		return nil, errors.New("its secrets are damaged")
	case err != nil:
		return nil, errors.New("its secrets do not open with this key (was the store key changed?)")
	}
	return plain, nil
}

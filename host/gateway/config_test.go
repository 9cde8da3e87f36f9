package gateway

import (
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/host/listener"
)

func TestValidateRefusesABadOrigin(t *testing.T) {
	if err := (Config{Listen: listener.Config{AllowedOrigins: []string{"https://ok.example", "not an origin"}}}).Validate(); err == nil || !strings.Contains(err.Error(), "not an origin") {
		t.Errorf("Validate with a bad origin: %v", err)
	}
}

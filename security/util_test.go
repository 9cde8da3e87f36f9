package security

import (
	"net/http"
	"time"
)

// healthy reports whether an mcphost at base answers /healthz with 200.
func healthy(base string) bool {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(base + "/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

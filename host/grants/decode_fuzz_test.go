package grants

import "testing"

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"version":1,"grants":[{"server":"s","access_token":"a","client_id":"c","auth_url":"u","token_url":"t","updated":"2026-01-01T00:00:00Z"}]}`))
	f.Add([]byte(`{"version":1,"sealed":"AAAA"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		gs, err := decode(b, nil)
		if err == nil {
			for _, g := range gs {
				_ = g.Token()
				_ = g.Config()
			}
		}
	})
}

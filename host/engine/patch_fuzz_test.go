package engine

import (
	"encoding/json"
	"testing"

	"github.com/mcphost-project/mcphost/host/config"
)

// FuzzMergePatch: any PATCH body applied to a stored definition either is
// refused or yields JSON that the strict definition decoder reads or
// refuses with field errors; nothing panics.
func FuzzMergePatch(f *testing.F) {
	stored, _ := json.Marshal(config.ServerSpec{Name: "s", Command: "sh", Args: []string{"-c", "x"}, Env: map[string]string{"K": config.Masked}})
	for _, p := range []string{`{"args":["y"]}`, `{"env":{"K":null,"N":"v"}}`, `{"env":null}`, `{"oauth":{"grant":"client_credentials"}}`, `[]`, `null`, `"x"`, `{"name":{"a":1}}`} {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, patch []byte) {
		merged, err := mergePatch(stored, patch)
		if err != nil {
			return
		}
		if !json.Valid(merged) {
			t.Fatalf("merge made invalid JSON: %s", merged)
		}
		_, _ = config.DecodeServerSpec(merged)
	})
}

func TestMergePatch(t *testing.T) {
	t.Parallel()
	doc := `{"a":"b","c":{"d":"e","f":"g"}}`
	got, err := mergePatch([]byte(doc), []byte(`{"a":"z","c":{"f":null},"n":[1]}`))
	if err != nil || string(got) != `{"a":"z","c":{"d":"e"},"n":[1]}` {
		t.Fatalf("%s %v", got, err)
	}
	if _, err := mergePatch([]byte(doc), []byte(`[1]`)); err == nil {
		t.Fatal("an array patch of a server was taken")
	}
}

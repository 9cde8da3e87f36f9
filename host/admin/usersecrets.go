package admin

import (
	"errors"
	"net/http"

	"github.com/mcphost-project/mcphost/host/engine"
	"github.com/mcphost-project/mcphost/host/store"
)

// A caller's secrets, /v1/users/{subject}/secrets: the values a server's
// caller templates read as ${caller.secrets.NAME}. They are set and
// deleted here, and listed by name: no answer ever carries a value. The
// subject is any caller's, of the store, the config file or an OAuth
// token.

// secretBody is PUT /v1/users/{subject}/secrets/{name}.
type secretBody struct {
	Value string `json:"value"`
}

// decodeSecret decodes PUT /v1/users/{subject}/secrets/{name}.
func decodeSecret(body []byte) (secretBody, error) {
	var b secretBody
	err := decodeStrict(body, &b, false)
	return b, err
}

func (a *api) listUserSecrets(w http.ResponseWriter, r *http.Request) {
	list, err := a.e.CallerSecrets(r.Context(), r.PathValue("subject"))
	if err != nil {
		secretProblem(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"secrets": list})
}

func (a *api) putUserSecret(w http.ResponseWriter, r *http.Request) {
	b, ok := readUserBody(w, r, decodeSecret, `{"value": "..."}`)
	if !ok {
		return
	}
	subject, name := r.PathValue("subject"), r.PathValue("name")
	s, err := a.e.SetCallerSecret(r.Context(), subject, name, []byte(b.Value))
	if err != nil {
		secretProblem(w, err)
		return
	}
	a.log.Info("user secret set", "subject", subject, "secret", name)
	writeJSON(w, http.StatusOK, s)
}

func (a *api) deleteUserSecret(w http.ResponseWriter, r *http.Request) {
	subject, name := r.PathValue("subject"), r.PathValue("name")
	if err := a.e.DeleteCallerSecret(r.Context(), subject, name); err != nil {
		secretProblem(w, err)
		return
	}
	a.log.Info("user secret removed", "subject", subject, "secret", name)
	w.WriteHeader(http.StatusNoContent)
}

// secretProblem answers err of a secret operation.
func secretProblem(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, store.ErrNoCallerSecret):
		writeProblem(w, http.StatusNotFound, "No such secret", err.Error()+"; GET /v1/users/{subject}/secrets lists them")
	case errors.Is(err, engine.ErrNoSecretKey):
		writeProblem(w, http.StatusConflict, "No store key", err.Error())
	default:
		userProblem(w, err)
	}
}

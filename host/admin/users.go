package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/engine"
	"github.com/mcphost-project/mcphost/host/store"
)

// The users of /v1/users: identities with API keys kept in the store (as
// SHA-256 digests), beside listen.auth's keys, which are listed but
// read-only. A new key is in the answer that made it, and nowhere else.

// userBody is POST /v1/users.
type userBody struct {
	Subject    string            `json:"subject"`
	Groups     []string          `json:"groups,omitempty"`
	Attributes map[string]string `json:"attributes,omitempty"`
	Disabled   bool              `json:"disabled,omitempty"`
	KeyName    string            `json:"keyName"`
}

// userPatchBody is PATCH /v1/users/{subject}: absent fields stay.
type userPatchBody struct {
	Groups     *[]string          `json:"groups,omitempty"`
	Attributes *map[string]string `json:"attributes,omitempty"`
	Disabled   *bool              `json:"disabled,omitempty"`
}

// keyBody is POST /v1/users/{subject}/keys; an empty body is {}.
type keyBody struct {
	Name     string `json:"name"`
	Replaces string `json:"replaces"`
}

// decodeStrict reads one JSON object into v: unknown fields, wrong types,
// null for the whole body and anything after the object are refused. An
// empty body is {} when empty is true.
func decodeStrict(body []byte, v any, empty bool) error {
	if empty && len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if bytes.Equal(bytes.TrimSpace(body), []byte("null")) {
		return errors.New("the body is null; send a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("more than one JSON value in the body")
	}
	return nil
}

// decodeUser decodes POST /v1/users.
func decodeUser(body []byte) (userBody, error) {
	var b userBody
	err := decodeStrict(body, &b, false)
	return b, err
}

// decodeUserPatch decodes PATCH /v1/users/{subject}. A null field is
// refused: to clear groups or attributes, send [] or {}.
func decodeUserPatch(body []byte) (userPatchBody, error) {
	var raw map[string]json.RawMessage
	if err := decodeStrict(body, &raw, false); err != nil {
		return userPatchBody{}, err
	}
	for k, v := range raw {
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return userPatchBody{}, fmt.Errorf("%s is null: send [] or {} to clear it, or leave it out to keep it", k)
		}
	}
	var p userPatchBody
	err := decodeStrict(body, &p, false)
	return p, err
}

// decodeKey decodes POST /v1/users/{subject}/keys.
func decodeKey(body []byte) (keyBody, error) {
	var b keyBody
	err := decodeStrict(body, &b, true)
	return b, err
}

// readUserBody reads and decodes a body, answering a problem when it
// cannot.
func readUserBody[T any](w http.ResponseWriter, r *http.Request, decode func([]byte) (T, error), shape string, types ...string) (T, bool) {
	var zero T
	body, err := readBody(r, types...)
	if err != nil {
		bodyProblem(w, err)
		return zero, false
	}
	v, err := decode(body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			problemFor(w, err)
			return zero, false
		}
		writeProblem(w, http.StatusBadRequest, "Malformed body", fmt.Sprintf("send %s: %v", shape, err))
		return zero, false
	}
	return v, true
}

func (a *api) listUsers(w http.ResponseWriter, r *http.Request) {
	list, err := a.e.Users(r.Context())
	if err != nil {
		userProblem(w, err)
		return
	}
	if list == nil {
		list = []engine.UserInfo{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"users": list})
}

func (a *api) getUser(w http.ResponseWriter, r *http.Request) {
	u, err := a.e.User(r.Context(), r.PathValue("subject"))
	if err != nil {
		userProblem(w, err)
		return
	}
	writeJSON(w, http.StatusOK, u)
}

func (a *api) createUser(w http.ResponseWriter, r *http.Request) {
	b, ok := readUserBody(w, r, decodeUser, `{"subject": "alice", "groups": ["eng"], "attributes": {"team": "core"}}`)
	if !ok {
		return
	}
	u, key, err := a.e.CreateUser(r.Context(), engine.UserSpec{Subject: b.Subject, Groups: b.Groups, Attributes: b.Attributes, Disabled: b.Disabled}, b.KeyName)
	if err != nil {
		userProblem(w, err)
		return
	}
	a.log.Info("user added", "subject", u.Subject, "key", key.ID)
	w.Header().Set("Location", "/v1/users/"+u.Subject)
	writeJSON(w, http.StatusCreated, map[string]any{"user": u, "key": key})
}

func (a *api) patchUser(w http.ResponseWriter, r *http.Request) {
	p, ok := readUserBody(w, r, decodeUserPatch, `{"groups": [...], "attributes": {...}, "disabled": true}, each optional`, "application/merge-patch+json")
	if !ok {
		return
	}
	subject := r.PathValue("subject")
	u, err := a.e.UpdateUser(r.Context(), subject, engine.UserPatch{Groups: p.Groups, Attributes: p.Attributes, Disabled: p.Disabled})
	if err != nil {
		userProblem(w, err)
		return
	}
	a.log.Info("user changed", "subject", subject, "disabled", u.Disabled)
	writeJSON(w, http.StatusOK, u)
}

func (a *api) deleteUser(w http.ResponseWriter, r *http.Request) {
	subject := r.PathValue("subject")
	if err := a.e.DeleteUser(r.Context(), subject); err != nil {
		userProblem(w, err)
		return
	}
	a.log.Info("user removed", "subject", subject)
	w.WriteHeader(http.StatusNoContent)
}

func (a *api) addUserKey(w http.ResponseWriter, r *http.Request) {
	b, ok := readUserBody(w, r, decodeKey, `{"name": "laptop", "replaces": "<key id>"}, each optional`)
	if !ok {
		return
	}
	subject := r.PathValue("subject")
	u, key, err := a.e.AddUserKey(r.Context(), subject, b.Name, b.Replaces)
	if err != nil {
		userProblem(w, err)
		return
	}
	a.log.Info("user key added", "subject", subject, "key", key.ID, "replaces", b.Replaces)
	writeJSON(w, http.StatusCreated, map[string]any{"user": u, "key": key})
}

func (a *api) revokeUserKey(w http.ResponseWriter, r *http.Request) {
	subject, id := r.PathValue("subject"), r.PathValue("id")
	if _, err := a.e.RevokeUserKey(r.Context(), subject, id); err != nil {
		userProblem(w, err)
		return
	}
	a.log.Info("user key revoked", "subject", subject, "key", id)
	w.WriteHeader(http.StatusNoContent)
}

// userProblem answers err of a user operation.
func userProblem(w http.ResponseWriter, err error) {
	var ue *engine.UserError
	switch {
	case errors.As(err, &ue):
		writeProblem(w, http.StatusUnprocessableEntity, "Invalid user", err.Error(), config.FieldError{Field: ue.Field, Detail: ue.Detail})
	case errors.Is(err, store.ErrNoUser):
		writeProblem(w, http.StatusNotFound, "No such user", err.Error()+"; GET /v1/users lists them")
	case errors.Is(err, store.ErrNoUserKey):
		writeProblem(w, http.StatusNotFound, "No such key", err.Error()+"; GET /v1/users/{subject} lists its keys")
	case errors.Is(err, store.ErrUserExists):
		writeProblem(w, http.StatusConflict, "User exists", err.Error()+"; change it with PATCH /v1/users/{subject}",
			config.FieldError{Field: "subject", Detail: "taken"})
	case errors.Is(err, engine.ErrConfigUser):
		writeProblem(w, http.StatusConflict, "Config user", err.Error())
	default:
		problemFor(w, err)
	}
}

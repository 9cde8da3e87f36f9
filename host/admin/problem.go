package admin

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/engine"
	"github.com/mcphost-project/mcphost/host/store"
	"github.com/mcphost-project/mcphost/internal/secrets"
)

// Problem is an RFC 9457 problem document, with the fields at fault.
type Problem struct {
	Type   string              `json:"type"`
	Title  string              `json:"title"`
	Status int                 `json:"status"`
	Detail string              `json:"detail,omitempty"`
	Errors []config.FieldError `json:"errors,omitempty"`
}

func writeProblem(w http.ResponseWriter, status int, title, detail string, fields ...config.FieldError) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	p := Problem{Type: "about:blank", Title: title, Status: status, Detail: secrets.MaskURLs(detail), Errors: fields}
	_ = json.NewEncoder(w).Encode(p)
}

// problemFor answers err with the status its kind calls for.
func problemFor(w http.ResponseWriter, err error) {
	var se *config.SpecError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &se) && se.Syntax:
		writeProblem(w, http.StatusBadRequest, "Malformed server definition", se.Error(), se.Errors...)
	case errors.As(err, &se):
		writeProblem(w, http.StatusUnprocessableEntity, "Invalid server definition", se.Error(), se.Errors...)
	case errors.As(err, &mbe):
		writeProblem(w, http.StatusRequestEntityTooLarge, "Body too large", "the body is over the limit of the admin API; a server definition is far smaller")
	case errors.Is(err, store.ErrNotFound):
		writeProblem(w, http.StatusNotFound, "No such server", err.Error())
	case errors.Is(err, store.ErrExists):
		writeProblem(w, http.StatusConflict, "Server exists", err.Error()+"; change it with PUT or PATCH /v1/servers/{name}",
			config.FieldError{Field: "name", Detail: "taken"})
	case errors.Is(err, engine.ErrConfigServer):
		writeProblem(w, http.StatusConflict, "Config server", err.Error())
	case errors.Is(err, store.ErrVersion):
		writeProblem(w, http.StatusPreconditionFailed, "Server changed", err.Error()+"; read it again (its ETag) and retry")
	case errors.Is(err, store.ErrNoKey):
		writeProblem(w, http.StatusUnprocessableEntity, "Secrets need a store key", err.Error())
	case errors.Is(err, engine.ErrNoStore):
		writeProblem(w, http.StatusConflict, "No store", err.Error())
	default:
		writeProblem(w, http.StatusServiceUnavailable, "Not done", err.Error())
	}
}

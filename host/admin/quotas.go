package admin

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/engine"
	"github.com/mcphost-project/mcphost/host/store"
)

// The quotas: the config file's (read-only) and the store's, which PUT
// and DELETE change (host/engine/quotas.go).

func (a *api) listQuotas(w http.ResponseWriter, r *http.Request) {
	list, err := a.e.Quotas(r.Context())
	if err != nil {
		quotaProblem(w, err)
		return
	}
	if list == nil {
		list = []engine.QuotaInfo{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"quotas": list})
}

func (a *api) getQuota(w http.ResponseWriter, r *http.Request) {
	info, err := a.e.Quota(r.Context(), r.PathValue("name"))
	if err != nil {
		quotaProblem(w, err)
		return
	}
	writeQuota(w, http.StatusOK, info)
}

func (a *api) putQuota(w http.ResponseWriter, r *http.Request) {
	ver, ok := ifMatch(w, r)
	if !ok {
		return
	}
	body, err := readBody(r)
	if err != nil {
		bodyProblem(w, err)
		return
	}
	spec, err := config.DecodeQuotaSpec(body)
	if err != nil {
		quotaProblem(w, err)
		return
	}
	name := r.PathValue("name")
	info, created, err := a.e.PutQuota(r.Context(), name, spec, ver)
	if err != nil {
		quotaProblem(w, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", "/v1/quotas/"+name)
	}
	a.log.Info("quota stored", "quota", name, "created", created)
	writeQuota(w, status, info)
}

func (a *api) deleteQuota(w http.ResponseWriter, r *http.Request) {
	ver, ok := ifMatch(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	if err := a.e.DeleteQuota(r.Context(), name, ver); err != nil {
		quotaProblem(w, err)
		return
	}
	a.log.Info("quota removed", "quota", name)
	w.WriteHeader(http.StatusNoContent)
}

func writeQuota(w http.ResponseWriter, status int, info engine.QuotaInfo) {
	if info.Version != 0 {
		w.Header().Set("ETag", fmt.Sprintf(`"v%d"`, info.Version))
	}
	writeJSON(w, status, info)
}

// quotaProblem answers err with the status its kind calls for, in a
// quota's words.
func quotaProblem(w http.ResponseWriter, err error) {
	var se *config.SpecError
	switch {
	case errors.As(err, &se) && se.Syntax:
		writeProblem(w, http.StatusBadRequest, "Malformed quota", se.Error(), se.Errors...)
	case errors.As(err, &se):
		writeProblem(w, http.StatusUnprocessableEntity, "Invalid quota", se.Error(), se.Errors...)
	case errors.Is(err, store.ErrNoQuota):
		writeProblem(w, http.StatusNotFound, "No such quota", err.Error())
	case errors.Is(err, engine.ErrConfigQuota):
		writeProblem(w, http.StatusConflict, "Config quota", err.Error())
	case errors.Is(err, store.ErrVersion):
		writeProblem(w, http.StatusPreconditionFailed, "Quota changed", "the quota changed since that version; read it again (its ETag) and retry")
	default:
		problemFor(w, err)
	}
}

package gateway

import (
	"fmt"
	"net/http"

	"github.com/mcphost-project/mcphost/host/auth"
)

// AuthorizeAdmin authenticates a request to the admin API with
// listen.auth, as it stands after the last reload, and requires an
// identity in one of its admin groups.
func (h *Host) AuthorizeAdmin(r *http.Request) (*auth.Identity, *auth.Failure) {
	a := h.authn.Load()
	if a == nil {
		return nil, &auth.Failure{Status: http.StatusUnauthorized, Reason: "the admin API needs credentials, and listen.auth has none"}
	}
	id, f := a.Authenticate(r.Context(), r.Header.Get("Authorization"))
	if f != nil {
		return nil, f
	}
	if !a.IsAdmin(id) {
		return id, &auth.Failure{Status: http.StatusForbidden,
			Reason: fmt.Sprintf("%s is in none of the admin groups %q (listen.auth.admin_groups)", id, a.AdminGroups())}
	}
	return id, nil
}

package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/upstream"
)

// askToAuthorize handles a request that failed because its caller must
// log in to a per_user server. A client that takes URL-mode elicitations
// is asked to open the link; once they accepted and the login completed,
// it reports retry, and the client hears that the elicitation completed.
// Otherwise it returns the error to answer with: the original one (whose
// text has the link), or why the login did not happen.
func (h *Host) askToAuthorize(ctx context.Context, ss *mcp.ServerSession, u *upstream.Server, err error) (retry bool, _ error) {
	var need *upstream.AuthorizationNeeded
	if !errors.As(err, &need) || need.Subject == "" || need.URL == "" || ss == nil || !takesURLElicitation(ss) {
		return false, err
	}
	f, ferr := u.UserFlow(need.Subject)
	if ferr != nil {
		return false, err
	}
	id := elicitationID()
	res, eerr := ss.Elicit(ctx, &mcp.ElicitParams{
		Mode:          "url",
		Message:       fmt.Sprintf("Server %q needs you to sign in with your own account before mcphost can call it for you.", u.Config.Name),
		URL:           need.URL,
		ElicitationID: id,
	})
	if eerr != nil {
		h.log.Debug("asking the client to open a login link failed; the result carries it", "server", u.Config.Name, "error", eerr)
		return false, err
	}
	if res.Action != "accept" {
		return false, fmt.Errorf("you did not authorize mcphost for server %q (%s); call again to be asked again, or open %s", u.Config.Name, res.Action, need.URL)
	}
	wait := time.NewTimer(upstream.LoginTimeout)
	defer wait.Stop()
	select {
	case <-f.LoginEnded():
	case <-ctx.Done():
		return false, err
	case <-wait.C:
	}
	if !f.HasGrant() {
		if lerr := f.LastLoginError(); lerr != nil {
			return false, fmt.Errorf("the login for server %q failed: %w; call again to start another", u.Config.Name, lerr)
		}
		return false, err
	}
	if nerr := ss.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: id}); nerr != nil {
		h.log.Debug("telling the client its login completed failed", "error", nerr)
	}
	return true, nil
}

// takesURLElicitation reports whether the client of ss said it takes
// URL-mode elicitations.
func takesURLElicitation(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip != nil && ip.Capabilities != nil && ip.Capabilities.Elicitation != nil && ip.Capabilities.Elicitation.URL != nil
}

func elicitationID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "login-" + hex.EncodeToString(b[:])
}

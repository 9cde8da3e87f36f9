package usersecrets

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Ask handles a request that failed because its caller has not given a
// secret (err wraps a *Needed). A client that takes URL-mode elicitations
// is asked to open the link; once they accepted and gave the secrets on
// the page, Ask reports retry, and the client hears that the elicitation
// completed. Otherwise it returns the error to answer with: the original
// one (whose text has the link), or why the secrets were not given. A nil
// Keeper returns err.
func (k *Keeper) Ask(ctx context.Context, ss *mcp.ServerSession, err error) (retry bool, _ error) {
	var need *Needed
	if k == nil || !errors.As(err, &need) || need.req == nil || ss == nil || !takesURLElicitation(ss) {
		return false, err
	}
	req := need.req
	id := "secret-" + rand.Text()
	res, eerr := ss.Elicit(ctx, &mcp.ElicitParams{
		Mode:          "url",
		Message:       fmt.Sprintf("Server %q needs your own %s (%s) before mcphost can call it for you.", need.Server, plural(len(need.Names), "secret", "secrets"), strings.Join(need.Names, ", ")),
		URL:           need.URL,
		ElicitationID: id,
	})
	if eerr != nil {
		k.log.Debug("asking the client to open a secret link failed; the result carries it", "server", need.Server, "error", eerr)
		return false, err
	}
	if res.Action != "accept" {
		return false, fmt.Errorf("you did not give your secrets for server %q (%s); call again to be asked again, or open %s", need.Server, res.Action, need.URL)
	}
	wait := time.NewTimer(time.Until(req.expires))
	defer wait.Stop()
	select {
	case <-req.done:
	case <-ctx.Done():
		return false, err
	case <-wait.C:
		return false, err
	}
	if nerr := ss.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: id}); nerr != nil {
		k.log.Debug("telling the client its secrets were given failed", "error", nerr)
	}
	return true, nil
}

// takesURLElicitation reports whether the client of ss said it takes
// URL-mode elicitations.
func takesURLElicitation(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip != nil && ip.Capabilities != nil && ip.Capabilities.Elicitation != nil && ip.Capabilities.Elicitation.URL != nil
}

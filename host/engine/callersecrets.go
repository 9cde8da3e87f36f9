package engine

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/usersecrets"
)

// Callers' secrets (host/usersecrets): kept in the store, sealed, set by
// an administrator (the admin API, mcphost users secret, the console) or
// by the caller on the secret page. A change is stored, then the upstream
// sessions of that caller whose servers read the secret are restarted:
// on this replica at once, on the others when their poll sees the
// secrets revision move (within UsersPoll).

// SecretInfo is a caller's secret as the admin API lists it: never its
// value.
type SecretInfo struct {
	Name    string    `json:"name"`
	Updated time.Time `json:"updated"`
}

// ErrNoSecretKey is returned for a change to callers' secrets in a store
// without a key.
var ErrNoSecretKey = errors.New("callers' secrets are kept sealed, and the store has no key (give the store block a key: mcphost keygen)")

// newSecretKeeper is the keeper of callers' secrets, nil unless the
// store can keep them.
func (e *Engine) newSecretKeeper() *usersecrets.Keeper {
	if e.store == nil || !e.store.CanKeepSecrets() {
		return nil
	}
	return usersecrets.New(usersecrets.Options{
		Values: func(ctx context.Context, subject string, names []string) (map[string]usersecrets.Value, error) {
			stored, err := e.store.CallerSecretValues(ctx, subject, names)
			out := make(map[string]usersecrets.Value, len(stored))
			for n, v := range stored {
				out[n] = usersecrets.Value{Value: v.Value, Version: v.Version}
			}
			return out, err
		},
		Set: func(ctx context.Context, subject, name string, value []byte) error {
			_, err := e.SetCallerSecret(ctx, subject, name, value)
			return err
		},
		Base: func() string {
			return strings.TrimSuffix(listener.DefaultRedirect(e.File().Host.Listen), auth.CallbackPath)
		},
		Logger: e.log.Named("secrets"),
	})
}

// CallerSecrets lists subject's secrets, without their values.
func (e *Engine) CallerSecrets(ctx context.Context, subject string) ([]SecretInfo, error) {
	if err := e.secretsWritable(subject, ""); err != nil {
		return nil, err
	}
	list, _, err := e.store.CallerSecrets(ctx, subject)
	if err != nil {
		return nil, err
	}
	out := make([]SecretInfo, 0, len(list))
	for _, s := range list {
		out = append(out, SecretInfo{Name: s.Name, Updated: s.Updated})
	}
	return out, nil
}

// SetCallerSecret stores value as subject's secret name, and restarts the
// caller's upstream sessions that read it.
func (e *Engine) SetCallerSecret(ctx context.Context, subject, name string, value []byte) (SecretInfo, error) {
	if err := e.secretsWritable(subject, name); err != nil {
		return SecretInfo{}, err
	}
	if err := usersecrets.CheckValue(value); err != nil {
		return SecretInfo{}, &UserError{Field: "value", Detail: err.Error()}
	}
	s, err := e.store.SetCallerSecret(ctx, subject, name, value)
	if err != nil {
		return SecretInfo{}, err
	}
	e.secretsChanged(ctx)
	return SecretInfo{Name: s.Name, Updated: s.Updated}, nil
}

// DeleteCallerSecret removes subject's secret name (store.ErrNoCallerSecret
// if there is none), and restarts the caller's upstream sessions that
// read it: they start again only once the caller gives it anew.
func (e *Engine) DeleteCallerSecret(ctx context.Context, subject, name string) error {
	if err := e.secretsWritable(subject, name); err != nil {
		return err
	}
	if err := e.store.DeleteCallerSecret(ctx, subject, name); err != nil {
		return err
	}
	e.secretsChanged(ctx)
	return nil
}

// secretsWritable refuses a subject or name that could not be one, and
// changes without a store that keeps secrets.
func (e *Engine) secretsWritable(subject, name string) error {
	switch {
	case e.store == nil:
		return ErrNoStore
	case !e.store.CanKeepSecrets():
		return ErrNoSecretKey
	}
	if err := checkUser(UserSpec{Subject: subject}); err != nil {
		return err
	}
	if name != "" && !config.ValidSecretName(name) {
		return &UserError{Field: "name", Detail: "a secret's name is letters, digits and _, starting with a letter or _, at most 64 bytes (as in caller.secrets.NAME)"}
	}
	return nil
}

// secretsChanged applies a change this process stored: the answer to the
// API call then holds for this replica; the others follow by polling.
func (e *Engine) secretsChanged(ctx context.Context) {
	if err := e.syncCallerSecrets(ctx, true); err != nil {
		e.log.Warn("a secret change is stored but its sessions are not yet restarted; polling the store restarts them", "error", err)
	}
}

// syncCallerSecrets reads the stored secrets' versions and, with restart,
// restarts the upstream sessions of each caller whose secrets changed
// since the last read.
func (e *Engine) syncCallerSecrets(ctx context.Context, restart bool) error {
	e.secretsMu.Lock()
	defer e.secretsMu.Unlock()
	list, rev, err := e.store.CallerSecrets(ctx, "")
	if err != nil {
		return err
	}
	next := usersecrets.Versions{}
	for _, s := range list {
		next[[2]string{s.Subject, s.Name}] = s.Version
	}
	if restart && e.host != nil {
		for _, c := range e.secretVersions.Diff(next) {
			e.host.RestartCallerSessions(c.Subject, c.Versions)
		}
	}
	e.secretVersions, e.secretsRev = next, rev
	return nil
}

// callerSecretsPoll looks at the secrets revision and restarts the
// sessions of the secrets that changed when it moved.
func (e *Engine) callerSecretsPoll() revisionPoll {
	return revisionPoll{
		revision: e.store.CallerSecretsRevision, mu: &e.secretsMu, seen: &e.secretsRev,
		sync: func(ctx context.Context) error { return e.syncCallerSecrets(ctx, true) },
		log: pollLog{lost: "the store's callers' secrets cannot be read; their sessions are restarted once they can",
			back: "the store's callers' secrets can be read again"},
	}
}

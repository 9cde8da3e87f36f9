package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/host/store"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// Run-time server management: the operations of the admin API, for a
// platform to call in-process. Servers come from the config file
// (read-only here) and from the store; names are unique across both.

// Errors of the server operations, besides store.ErrNotFound, ErrExists,
// ErrVersion and ErrNoKey, and *config.SpecError for a bad definition.
var (
	// ErrConfigServer is returned for a change to a server of the config
	// file: the file is where an operator reads what runs.
	ErrConfigServer = errors.New("defined in the config file")
	// ErrNoStore is returned for changes when the engine has no store.
	ErrNoStore = errors.New("this mcphost has no store (add an admin or store block to the config)")
)

// errUnchanged ends an update that would store what is stored.
var errUnchanged = errors.New("unchanged")

// Sources of a server.
const (
	SourceConfig = "config"
	SourceStore  = "store"
)

// ServerInfo is a server as the admin API shows it: its definition with
// secret values masked, where it comes from, and its state.
type ServerInfo struct {
	config.ServerSpec
	Source  string           `json:"source"`
	Version int64            `json:"version,omitempty"`
	Created *time.Time       `json:"created,omitempty"`
	Updated *time.Time       `json:"updated,omitempty"`
	Status  *upstream.Status `json:"status,omitempty"`
	// Problem says why a stored server is not served: its name is now
	// taken by the config file, or it no longer decodes.
	Problem string `json:"problem,omitempty"`
}

// Servers lists every server: the config file's in file order, then the
// store's by name.
func (e *Engine) Servers(ctx context.Context) ([]ServerInfo, error) {
	file := e.File()
	statuses := map[string]upstream.Status{}
	for _, st := range e.host.Statuses() {
		statuses[st.Name] = st
	}
	var out []ServerInfo
	for _, sc := range file.Host.Servers {
		out = append(out, configInfo(sc, statuses))
	}
	if e.store == nil {
		return out, nil
	}
	stored, _, err := e.store.Servers(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the store: %w", err)
	}
	for _, sv := range stored {
		out = append(out, storedInfo(sv, file, statuses))
	}
	return out, nil
}

// Server returns one server; store.ErrNotFound if there is none.
func (e *Engine) Server(ctx context.Context, name string) (ServerInfo, error) {
	file := e.File()
	if sc, ok := configServer(file, name); ok {
		return configInfo(sc, e.statuses(name)), nil
	}
	if e.store == nil {
		return ServerInfo{}, notFound(name)
	}
	sv, err := e.store.Server(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return ServerInfo{}, notFound(name)
	}
	if err != nil {
		return ServerInfo{}, err
	}
	return storedInfo(sv, file, e.statuses(name)), nil
}

// CreateServer adds a server to the store and connects it, waiting up to
// its connect timeout (or ctx) for the first connection.
func (e *Engine) CreateServer(ctx context.Context, spec config.ServerSpec) (ServerInfo, error) {
	if e.store == nil {
		return ServerInfo{}, ErrNoStore
	}
	file := e.File()
	if _, ok := configServer(file, spec.Name); ok {
		return ServerInfo{}, configServerError(file, spec.Name)
	}
	// Nothing is stored yet: a masked value is a mistake, not "keep".
	spec, err := spec.Keep(nil, config.SpecSecrets{})
	if err != nil {
		return ServerInfo{}, err
	}
	sv, sc, err := e.prepare(file, spec)
	if err != nil {
		return ServerInfo{}, err
	}
	saved, err := e.store.Create(ctx, sv)
	if err != nil {
		return ServerInfo{}, err
	}
	return e.changed(ctx, saved, sc)
}

// ReplaceServer stores spec as the whole definition of name, creating it
// if absent. ifVersion, when not 0, must be the stored version. Masked
// secret values ("********") keep the stored ones.
func (e *Engine) ReplaceServer(ctx context.Context, name string, spec config.ServerSpec, ifVersion int64) (ServerInfo, bool, error) {
	if spec.Name == "" {
		spec.Name = name
	}
	if spec.Name != name {
		return ServerInfo{}, false, &config.SpecError{Errors: []config.FieldError{{Field: "name",
			Detail: fmt.Sprintf("the definition is named %q but the path names %q; renaming is removing and adding", spec.Name, name)}}}
	}
	return e.update(ctx, name, ifVersion, func(cur *config.ServerSpec) (config.ServerSpec, error) { return spec, nil })
}

// PatchServer applies a JSON merge patch (RFC 7396) to a stored server.
func (e *Engine) PatchServer(ctx context.Context, name string, patch []byte, ifVersion int64) (ServerInfo, error) {
	info, _, err := e.update(ctx, name, ifVersion, func(cur *config.ServerSpec) (config.ServerSpec, error) {
		if cur == nil {
			return config.ServerSpec{}, store.ErrNotFound
		}
		doc, err := json.Marshal(cur)
		if err != nil {
			return config.ServerSpec{}, err
		}
		merged, err := mergePatch(doc, patch)
		if err != nil {
			return config.ServerSpec{}, err
		}
		spec, err := config.DecodeServerSpec(merged)
		if err != nil {
			return config.ServerSpec{}, err
		}
		if spec.Name != name {
			return config.ServerSpec{}, &config.SpecError{Errors: []config.FieldError{{Field: "name", Detail: "a patch cannot rename a server; remove it and add it under the new name"}}}
		}
		return spec, nil
	})
	return info, err
}

// update is the read-modify-write of ReplaceServer and PatchServer, in one
// store transaction: change gets the stored definition, masked (nil if
// there is none).
func (e *Engine) update(ctx context.Context, name string, ifVersion int64, change func(cur *config.ServerSpec) (config.ServerSpec, error)) (ServerInfo, bool, error) {
	if e.store == nil {
		return ServerInfo{}, false, ErrNoStore
	}
	file := e.File()
	if _, ok := configServer(file, name); ok {
		return ServerInfo{}, false, configServerError(file, name)
	}
	var sc upstream.ServerConfig
	var unchanged store.Server
	saved, created, err := e.store.Update(ctx, name, ifVersion, func(cur *store.Server) (*store.Server, error) {
		var curSpec *config.ServerSpec
		var secrets config.SpecSecrets
		if cur != nil {
			s, sec, err := decodeStored(*cur)
			if err != nil {
				return nil, err
			}
			curSpec, secrets = &s, sec
		}
		next, err := change(curSpec)
		if err != nil {
			return nil, err
		}
		if next, err = next.Keep(curSpec, secrets); err != nil {
			var se *config.SpecError
			if cur != nil && cur.SecretsErr != nil && errors.As(err, &se) {
				// Nothing is kept of secrets that do not open.
				se.Errors = append(se.Errors, config.FieldError{Detail: fmt.Sprintf("the stored secrets cannot be kept (%v): send every secret value", cur.SecretsErr)})
			}
			return nil, err
		}
		sv, c, err := e.prepare(file, next)
		sc = c
		if err == nil && cur != nil && cur.SecretsErr == nil && bytes.Equal(sv.Spec, cur.Spec) && bytes.Equal(sv.Secrets, cur.Secrets) {
			unchanged = *cur
			return nil, errUnchanged
		}
		return &sv, err
	})
	if errors.Is(err, errUnchanged) {
		// Nothing to write: the version stays, the server keeps running.
		return storedInfo(unchanged, file, e.statuses(name)), false, nil
	}
	if errors.Is(err, store.ErrNotFound) {
		return ServerInfo{}, false, notFound(name)
	}
	if err != nil {
		return ServerInfo{}, false, err
	}
	info, err := e.changed(ctx, saved, sc)
	return info, created, err
}

// DeleteServer removes a stored server, ending its sessions.
func (e *Engine) DeleteServer(ctx context.Context, name string, ifVersion int64) error {
	if e.store == nil {
		return ErrNoStore
	}
	if file := e.File(); func() bool { _, ok := configServer(file, name); return ok }() {
		return configServerError(file, name)
	}
	if err := e.store.Delete(ctx, name, ifVersion); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return notFound(name)
		}
		return err
	}
	e.syncAfterWrite(ctx, name)
	return nil
}

// ReconnectServer ends a server's sessions and connects it again (also one
// that was disconnected), waiting up to ctx for the connection.
func (e *Engine) ReconnectServer(ctx context.Context, name string) (ServerInfo, error) {
	if err := e.host.Reconnect(ctx, name); err != nil && errors.Is(err, gateway.ErrUnknownServer) {
		return ServerInfo{}, notFound(name)
	}
	// A failed connect is in the status, not an error of the operation.
	return e.Server(ctx, name)
}

// DisconnectServer ends a server's sessions and keeps it off until
// ReconnectServer; its tools leave the catalog.
func (e *Engine) DisconnectServer(ctx context.Context, name string) (ServerInfo, error) {
	if err := e.host.Disconnect(name); err != nil {
		if errors.Is(err, gateway.ErrUnknownServer) {
			return ServerInfo{}, notFound(name)
		}
		return ServerInfo{}, err
	}
	return e.Server(ctx, name)
}

// TestServer connects to a definition without adding it (host.Probe). A
// definition the store would refuse is a *config.SpecError.
func (e *Engine) TestServer(ctx context.Context, spec config.ServerSpec) (*upstream.ProbeResult, error) {
	if spec.Name == "" {
		spec.Name = "test"
	}
	// A masked value would be sent to the server as "********".
	spec, err := spec.Keep(nil, config.SpecSecrets{})
	if err != nil {
		return nil, err
	}
	sc, err := spec.Server(e.File().Path)
	if err == nil {
		err = config.CheckCommand(sc)
	}
	if err != nil {
		return nil, err
	}
	return upstream.Probe(ctx, sc, e.log.Named("test")), nil
}

// prepare checks a definition as `mcphost validate` would, and splits it
// into what the store keeps in the clear and sealed.
func (e *Engine) prepare(file *config.File, spec config.ServerSpec) (store.Server, upstream.ServerConfig, error) {
	sc, err := spec.Server(file.Path)
	if err == nil {
		err = config.CheckCommand(sc)
	}
	if err != nil {
		return store.Server{}, upstream.ServerConfig{}, err
	}
	pub, sec := spec.Split()
	sv := store.Server{Name: spec.Name}
	if sv.Spec, err = json.Marshal(pub); err != nil {
		return store.Server{}, upstream.ServerConfig{}, err
	}
	if !sec.Empty() {
		if !e.store.CanKeepSecrets() {
			return store.Server{}, upstream.ServerConfig{}, store.ErrNoKey
		}
		if sv.Secrets, err = json.Marshal(sec); err != nil {
			return store.Server{}, upstream.ServerConfig{}, err
		}
	}
	return sv, sc, nil
}

// changed brings the host in line with the store after a write, then waits
// (up to the server's connect timeout, and ctx) for the server to leave
// "connecting", so the answer shows whether it works.
func (e *Engine) changed(ctx context.Context, saved store.Server, sc upstream.ServerConfig) (ServerInfo, error) {
	e.syncAfterWrite(ctx, saved.Name)
	timeout := sc.ConnectTimeout
	if timeout <= 0 {
		timeout = upstream.DefaultConnectTimeout
	}
	wait, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	e.host.WaitConnecting(wait, saved.Name)
	return storedInfo(saved, e.File(), e.statuses(saved.Name)), nil
}

// syncAfterWrite applies a change the store has committed. Its failure is
// logged, not returned: the change is made (an error would have a client
// retry it, and fail on what it did), and the poller applies it once the
// store can be read again.
func (e *Engine) syncAfterWrite(ctx context.Context, name string) {
	if err := e.Sync(ctx); err != nil {
		e.log.Warn("a server change is stored but not yet applied; polling the store applies it", "server", name, "error", err)
	}
}

func (e *Engine) statuses(name string) map[string]upstream.Status {
	for _, st := range e.host.Statuses() {
		if st.Name == name {
			return map[string]upstream.Status{name: st}
		}
	}
	return nil
}

// configServerError refuses a change to a server of the config file.
func configServerError(file *config.File, name string) error {
	return fmt.Errorf("server %q is %w (%s); change it there, or add a server of another name", name, ErrConfigServer, file.Path)
}

// notFound names the server that is not there.
func notFound(name string) error {
	return fmt.Errorf("%w: %q is neither in the config file nor in the store", store.ErrNotFound, name)
}

func configServer(file *config.File, name string) (upstream.ServerConfig, bool) {
	i := slices.IndexFunc(file.Host.Servers, func(sc upstream.ServerConfig) bool { return sc.Name == name })
	if i < 0 {
		return upstream.ServerConfig{}, false
	}
	return file.Host.Servers[i], true
}

func configInfo(sc upstream.ServerConfig, statuses map[string]upstream.Status) ServerInfo {
	pub, _ := config.SpecOf(sc).Split()
	info := ServerInfo{ServerSpec: pub, Source: SourceConfig}
	if st, ok := statuses[sc.Name]; ok {
		info.Status = &st
	}
	return info
}

func storedInfo(sv store.Server, file *config.File, statuses map[string]upstream.Status) ServerInfo {
	info := ServerInfo{Source: SourceStore, Version: sv.Version, Created: &sv.Created, Updated: &sv.Updated}
	spec, sec, err := decodeStored(sv)
	// Masked again: a row written before a kind of secret was sealed
	// (a URL's query) shows it masked all the same.
	info.ServerSpec, _ = spec.Split()
	info.Name = sv.Name
	switch {
	case err != nil:
		info.Problem = err.Error()
	case func() bool { _, ok := configServer(file, sv.Name); return ok }():
		info.Problem = "not served: the config file now defines a server of the same name, which wins"
	case sv.SecretsErr != nil:
		info.Problem = "not served: " + sv.SecretsErr.Error() + "; replace the definition with every secret value, or delete it"
	default:
		if _, err := spec.Join(sec).Server(file.Path); err != nil {
			info.Problem = "not served: this mcphost refuses the stored definition: " + err.Error()
			break
		}
		if st, ok := statuses[sv.Name]; ok {
			info.Status = &st
		}
	}
	return info
}

// decodeStored reads a stored server's masked definition and its secrets.
func decodeStored(sv store.Server) (config.ServerSpec, config.SpecSecrets, error) {
	var spec config.ServerSpec
	if err := json.Unmarshal(sv.Spec, &spec); err != nil {
		return config.ServerSpec{}, config.SpecSecrets{}, fmt.Errorf("stored definition of %q does not decode: %w", sv.Name, err)
	}
	sec, err := config.DecodeSecrets(sv.Secrets)
	if err != nil {
		return config.ServerSpec{}, config.SpecSecrets{}, fmt.Errorf("stored secrets of %q do not decode: %w", sv.Name, err)
	}
	return spec, sec, nil
}

// mergePatch applies an RFC 7396 JSON merge patch to doc.
func mergePatch(doc, patch []byte) ([]byte, error) {
	var target, p any
	if err := json.Unmarshal(doc, &target); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, &config.SpecError{Syntax: true, Errors: []config.FieldError{{Detail: "the patch is not JSON: " + err.Error()}}}
	}
	if _, ok := p.(map[string]any); !ok {
		return nil, &config.SpecError{Syntax: true, Errors: []config.FieldError{{Detail: "a merge patch of a server is a JSON object"}}}
	}
	return json.Marshal(merge(target, p))
}

func merge(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
		} else {
			tm[k] = merge(tm[k], v)
		}
	}
	return tm
}

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/audit"
	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/host/store"
	"github.com/mcphost-project/mcphost/plugins"
)

// ErrNoAuditStore is returned by QueryAudit when the audit log is not kept
// in a store: no audit block, or no store.
var ErrNoAuditStore = errors.New("the audit log is not kept in a store (add an audit block, and a store or admin block)")

// startAudit opens the audit log of file's audit block (nil without one)
// and returns what the host needs of it.
func (e *Engine) startAudit(file *config.File) (*gateway.AuditOptions, error) {
	a := file.Audit
	if a == nil {
		return nil, nil
	}
	o := audit.Options{File: a.File, MaxSize: a.MaxSize, MaxFiles: a.MaxFiles, Retention: a.Retention, MaxRows: a.MaxRows,
		Logger: e.log.Named("audit")}
	if e.store != nil {
		o.Store = e.store
	}
	masked := "no (no redact plugin)"
	if a.Arguments || a.Results {
		if a.Redact != "" {
			o.Redact = e.redactor(a.Redact)
			masked = "by plugin " + a.Redact
		}
	} else {
		masked = "not recorded"
	}
	l, err := audit.New(o)
	if err != nil {
		return nil, err
	}
	e.audit = l
	e.auditInStore = o.Store != nil
	where := a.File
	if where == audit.Stdout {
		where = "stdout"
	}
	e.log.Info("audit log", "file", where, "store", o.Store != nil, "arguments", a.Arguments, "results", a.Results,
		"listings", a.Listings, "masked", masked)
	return &gateway.AuditOptions{Log: l, Arguments: a.Arguments, Results: a.Results, Listings: a.Listings}, nil
}

// auditDrain bounds how long Close waits for the audit log to write what
// it holds.
const auditDrain = 5 * time.Second

// closeAudit writes what the audit log holds and closes it.
func (e *Engine) closeAudit() error {
	if e.audit == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), auditDrain)
	defer cancel()
	return e.audit.Close(ctx)
}

// Audit is the engine's audit log; nil without an audit block.
func (e *Engine) Audit() *audit.Log { return e.audit }

// QueryAudit returns a page of the audit lines kept in the store, newest
// first; ErrNoAuditStore when they are not kept there. A cursor that is
// not one is store.ErrCursor.
func (e *Engine) QueryAudit(ctx context.Context, q store.AuditQuery) (store.AuditPage, error) {
	if !e.auditInStore {
		return store.AuditPage{}, ErrNoAuditStore
	}
	return e.store.QueryAudit(ctx, q)
}

// redactor masks arguments and results with the message hook of the
// plugin named name, which it runs as it runs on a log message: the
// arguments and the result are the message's data, whose every string
// builtin:redact masks, at any depth.
func (e *Engine) redactor(name string) func(ctx context.Context, args, res json.RawMessage) (json.RawMessage, json.RawMessage, error) {
	type payload struct {
		Arguments json.RawMessage `json:"arguments,omitempty"`
		Result    json.RawMessage `json:"result,omitempty"`
	}
	type message struct {
		Level  string  `json:"level"`
		Logger string  `json:"logger"`
		Data   payload `json:"data"`
	}
	return func(ctx context.Context, args, res json.RawMessage) (json.RawMessage, json.RawMessage, error) {
		msg, err := json.Marshal(message{Level: "info", Logger: "mcphost.audit", Data: payload{args, res}})
		if err != nil {
			return nil, nil, err
		}
		// The server names the audit log in what the plugin logs.
		out, err := e.mgr.MessageBy(ctx, name, &abi.MessageInput{Method: abi.MethodLoggingMessage, Server: "(audit log)", Message: msg})
		if err != nil {
			return nil, nil, err
		}
		var back message
		if err := json.Unmarshal(out, &back); err != nil {
			return nil, nil, fmt.Errorf("plugin %q answered what is not a log message: %w", name, err)
		}
		return back.Data.Arguments, back.Data.Result, nil
	}
}

var (
	_ gateway.HookWanter   = (*plugins.Manager)(nil)
	_ gateway.MethodWanter = (*plugins.Manager)(nil)
	_ audit.Store          = (*store.Store)(nil)
)

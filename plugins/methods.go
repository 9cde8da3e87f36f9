package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/decision"
)

// The hooks of ABI 1.2 govern every MCP method but tools: list filters
// prompt and resource listings, request admits what a client asks of an
// upstream or an upstream of a client, and message transforms content on
// its way to the client. Each runs a plugin only for the methods its hints
// name, and only for the servers in its scope.

// wantsMethod reports whether p runs hook for method.
func (p *Plugin) wantsMethod(hook, method string) bool {
	return p.HasHook(hook) && p.hints.WantsMethod(hook, method)
}

// WantsMethod reports whether any plugin of the chain runs hook for method.
func (c *Chain) WantsMethod(hook, method string) bool {
	for _, p := range c.plugins {
		if p.wantsMethod(hook, method) {
			return true
		}
	}
	return false
}

// List runs every list hook that wants in.Method, in order, each on the
// previous output. A plugin scoped to servers sees only their entries, and
// the others keep their places.
func (c *Chain) List(ctx context.Context, in *abi.ListInput) ([]abi.Item, error) {
	return held(c, func() ([]abi.Item, error) { return c.list(ctx, in) })
}

func (c *Chain) list(ctx context.Context, in *abi.ListInput) ([]abi.Item, error) {
	items := in.Items
	for _, p := range c.plugins {
		if !p.wantsMethod(abi.HookList, in.Method) || !p.ForCaller(&in.Caller) {
			continue
		}
		next, err := c.listOne(ctx, p, in.Caller, in.Method, items)
		if err != nil {
			if err = c.failure(p, abi.HookList, err); err != nil {
				return nil, err
			}
			continue
		}
		items = next
	}
	if items == nil {
		items = []abi.Item{}
	}
	return items, nil
}

func (c *Chain) listOne(ctx context.Context, p *Plugin, caller abi.Caller, method string, items []abi.Item) ([]abi.Item, error) {
	sub := make([]abi.Item, 0, len(items))
	for _, it := range items {
		if p.InScope(it.Server) {
			sub = append(sub, it)
		}
	}
	if len(sub) == 0 {
		return items, nil
	}
	input, err := json.Marshal(abi.ListInput{Caller: caller, Method: method, Items: sub})
	if err != nil {
		return nil, err
	}
	out, err := p.Call(ctx, abi.HookList, input)
	if err != nil {
		return nil, err
	}
	got, err := decodeList(out, sub)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.spec.Name, err)
	}
	if len(sub) == len(items) {
		return got, nil
	}
	// Out-of-scope entries keep their places; the plugin's output fills
	// the places of the entries it was given, in its order.
	merged := make([]abi.Item, 0, len(items))
	k := 0
	for _, it := range items {
		if !p.InScope(it.Server) {
			merged = append(merged, it)
		} else if k < len(got) {
			merged = append(merged, got[k])
			k++
		}
	}
	return append(merged, got[k:]...), nil
}

// Request runs the request hooks that want in.Method, of the plugins in
// scope of in.Server, in order; the first deny ends the chain. A plugin
// failing with on_error "deny" denies the request, naming the plugin.
func (c *Chain) Request(ctx context.Context, in *abi.RequestInput) (*abi.RequestDecision, error) {
	return held(c, func() (*abi.RequestDecision, error) { return c.request(ctx, in) })
}

func (c *Chain) request(ctx context.Context, in *abi.RequestInput) (*abi.RequestDecision, error) {
	record := decision.Recorder(ctx) // told what each plugin that ran decided (decisions.go)
	var input []byte
	for _, p := range c.plugins {
		if !p.wantsMethod(abi.HookRequest, in.Method) || !p.InScope(in.Server) || !p.ForCaller(&in.Caller) {
			continue
		}
		if input == nil {
			var err error
			if input, err = json.Marshal(in); err != nil {
				return nil, err
			}
		}
		d, err := c.requestOne(ctx, p, input)
		if err != nil {
			failed := err
			if err = c.failure(p, abi.HookRequest, err); err != nil {
				reason := err.(*PolicyError).ClientMessage()
				if record != nil {
					record(failedDecision(p, abi.HookRequest, decision.Deny, reason, failed))
				}
				return &abi.RequestDecision{Action: abi.ActionDeny, Reason: reason}, nil
			}
			if record != nil {
				record(failedDecision(p, abi.HookRequest, decision.Skipped, "", failed))
			}
			continue
		}
		if d.Action == abi.ActionDeny {
			if record != nil {
				record(decision.Decision{Plugin: p.spec.Name, Hook: abi.HookRequest, Action: decision.Deny, Reason: d.Reason})
			}
			if d.Reason == "" {
				d.Reason = fmt.Sprintf("denied by policy %q", p.spec.Name)
			} else {
				d.Reason = fmt.Sprintf("policy %q: %s", p.spec.Name, d.Reason)
			}
			return d, nil
		}
		if record != nil {
			record(decision.Decision{Plugin: p.spec.Name, Hook: abi.HookRequest, Action: decision.Allow})
		}
	}
	return &abi.RequestDecision{Action: abi.ActionAllow}, nil
}

func (c *Chain) requestOne(ctx context.Context, p *Plugin, input []byte) (*abi.RequestDecision, error) {
	out, err := p.Call(ctx, abi.HookRequest, input)
	if err != nil {
		return nil, err
	}
	d, err := decodeRequestDecision(out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.spec.Name, err)
	}
	return d, nil
}

// Message runs the message hooks that want in.Method, of the plugins in
// scope of in.Server, in order, each on the previous message. It returns
// in.Message itself when every plugin left the message unchanged, so the
// caller can tell by identity; a failing plugin with on_error "deny" fails
// with an error and the message must not be delivered.
func (c *Chain) Message(ctx context.Context, in *abi.MessageInput) (json.RawMessage, error) {
	return held(c, func() (json.RawMessage, error) { return c.message(ctx, in) })
}

func (c *Chain) message(ctx context.Context, in *abi.MessageInput) (json.RawMessage, error) {
	cur := *in
	for _, p := range c.plugins {
		if !p.wantsMethod(abi.HookMessage, in.Method) || !p.InScope(in.Server) || !p.ForCaller(&in.Caller) {
			continue
		}
		if messageUnchanged(p.hints, cur.Message) {
			p.reused()
			continue
		}
		input, err := json.Marshal(&cur)
		if err != nil {
			return nil, err
		}
		out, err := p.Call(ctx, abi.HookMessage, input)
		if err == nil {
			var msg json.RawMessage
			if msg, err = decodeMessage(out); err == nil {
				if msg != nil {
					cur.Message = msg
				}
				continue
			}
			err = fmt.Errorf("%s: %w", p.spec.Name, err)
		}
		if err = c.failure(p, abi.HookMessage, err); err != nil {
			return nil, err
		}
	}
	return cur.Message, nil
}

// messageUnchanged reports whether h promises to leave msg unchanged: it is
// shorter than messageMinBytes, or holds none of messageKeywords. The
// keywords are searched in the JSON as encoded; JSON holding an escape
// sequence, which could spell a keyword, is always looked at.
func messageUnchanged(h *abi.Hints, msg json.RawMessage) bool {
	if h == nil {
		return false
	}
	if len(msg) < h.MessageMinBytes {
		return true
	}
	if len(h.MessageKeywords) == 0 || bytes.IndexByte(msg, '\\') >= 0 {
		return false
	}
	for _, k := range h.MessageKeywords {
		if k == "" || bytes.Contains(msg, []byte(k)) {
			return false
		}
	}
	return true
}

// WantsMethod reports whether the current generation runs hook for method;
// like Wants, true after Close so that hooks fail closed.
func (m *Manager) WantsMethod(hook, method string) bool {
	if m.shut.Load() {
		return true
	}
	c := m.cur.Load()
	return c != nil && c.WantsMethod(hook, method)
}

// ErrNoPlugin is returned by MessageBy for a name the current generation
// does not have.
var ErrNoPlugin = errors.New("plugins: no plugin of that name")

// MessageBy runs the message hook of the plugin named name, and no other,
// on in, whatever the plugin's servers, callers and methods: for a caller
// that wants one policy's treatment of content of its own (the audit log
// has the redact policy mask what it records). It returns in.Message when
// the plugin left the message as it was. A failure is an error, whatever
// the plugin's on_error: there is no chain to fail open into.
func (m *Manager) MessageBy(ctx context.Context, name string, in *abi.MessageInput) (json.RawMessage, error) {
	c := m.acquire()
	if c == nil {
		return nil, fmt.Errorf("%w %q (no plugins are loaded)", ErrNoPlugin, name)
	}
	defer c.release()
	for _, p := range c.plugins {
		if p.spec.Name != name {
			continue
		}
		if !p.HasHook(abi.HookMessage) {
			return nil, fmt.Errorf("%w: %q has no message hook", ErrNoHook, name)
		}
		if messageUnchanged(p.hints, in.Message) {
			p.reused()
			return in.Message, nil
		}
		input, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		out, err := p.Call(ctx, abi.HookMessage, input)
		if err == nil {
			var msg json.RawMessage
			if msg, err = decodeMessage(out); err == nil {
				if msg == nil {
					return in.Message, nil
				}
				return msg, nil
			}
			p.noteFailure(err)
		}
		return nil, &PolicyError{Plugin: name, Hook: abi.HookMessage, Err: err}
	}
	return nil, fmt.Errorf("%w %q", ErrNoPlugin, name)
}

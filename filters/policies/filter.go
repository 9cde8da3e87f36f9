package policies

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
)

// filter is builtin:allow (keep only what matches) and builtin:deny (drop
// what matches). Configuration:
//
//	tools     = ["files__read_*"]  # globs over exposed tool names
//	prompts   = ["notes__*"]       # globs over exposed prompt names
//	resources = ["notes://*"]      # globs over resource URIs and URI templates
//	servers   = ["clock"]          # globs over server names
//	methods   = ["sampling/*"]     # globs over MCP method names
//
// and the caller condition (callerCondition: subjects, groups,
// except_subjects, except_groups): a caller it does not apply to passes
// untouched.
//
// Whatever the gateway carries has a method, a server and, unless it is a
// request an upstream sends to the client, a name: the exposed name of a
// tool or prompt, the URI of a resource or the URI template of a template.
// It matches if its method matches a methods pattern, its server a servers
// pattern, or its name a pattern of its kind's key. allow judges a request
// an upstream sends to the client only when methods is set. At least one
// key must be set.
type filter struct {
	name  string
	allow bool
	// Patterns by key; a key that is not set has none.
	tools, prompts, resources, servers, methods globs
	haveMethods                                 bool
	refusal
	callers callerCondition
}

// The keys of filter whose patterns match names, one per kind of thing.
const (
	kindTools     = "tools"
	kindPrompts   = "prompts"
	kindResources = "resources"
)

// methodToolsList and methodToolsCall are the methods the tool hooks stand
// for, which methods patterns match too.
const (
	methodToolsList = "tools/list"
	methodToolsCall = "tools/call"
)

// listMethods are the listings the list hook sees; clientRequests the
// requests a client sends that the request hook sees, and upstreamRequests
// the ones an upstream sends to the client.
var (
	listMethods      = []string{abi.MethodPromptsList, abi.MethodResourcesList, abi.MethodResourceTemplatesList}
	clientRequests   = []string{abi.MethodPromptsGet, abi.MethodResourcesRead, abi.MethodResourcesSubscribe, abi.MethodComplete}
	upstreamRequests = []string{abi.MethodCreateMessage, abi.MethodElicit, abi.MethodRootsList}
)

func newFilter(name string, allow bool) pdk.Policy {
	f := &filter{name: name, allow: allow}
	return pdk.Policy{
		Name:      name,
		Version:   Version,
		Configure: f.configure,
		ToolsList: f.toolsList,
		ToolCall:  f.toolCall,
		List:      f.list,
		Request:   f.request,
		// Decided by method, server and name alone (a completion's
		// reference type picks which key its name is matched against),
		// and by the caller when a caller condition is set.
		Hints: func() abi.Hints {
			return abi.Hints{ListPerTool: true, CallIgnoresArguments: true, IgnoresCaller: !f.callers.dependsOnCaller(), Methods: map[string][]string{
				abi.HookList:    f.governed(listMethods),
				abi.HookRequest: f.governed(append(append([]string{}, clientRequests...), upstreamRequests...)),
			}}
		},
	}
}

func (f *filter) configure(cfg pdk.ConfigSource) error {
	if err := f.refusal.configure(cfg); err != nil {
		return err
	}
	if err := f.callers.configure(cfg); err != nil {
		return err
	}
	set := false
	for _, k := range []struct {
		key string
		gs  *globs
	}{{kindTools, &f.tools}, {kindPrompts, &f.prompts}, {kindResources, &f.resources}, {"servers", &f.servers}, {"methods", &f.methods}} {
		list, ok, err := stringList(cfg, k.key)
		if err != nil {
			return err
		}
		if *k.gs, err = compileGlobs(k.key, list); err != nil {
			return err
		}
		set = set || ok
		if k.key == "methods" {
			f.haveMethods = ok
		}
	}
	if !set {
		return errors.New(`set at least one of "tools", "prompts", "resources" (globs over their names), "servers" or "methods"`)
	}
	return nil
}

// globsOf returns the patterns of a kind's key.
func (f *filter) globsOf(kind string) globs {
	switch kind {
	case kindTools:
		return f.tools
	case kindPrompts:
		return f.prompts
	case kindResources:
		return f.resources
	}
	return nil
}

// match reports whether something of kind (one of the kind keys, or "" for
// what has no name) called name, carried by method for server, matches,
// and says by which pattern.
func (f *filter) match(method, server, kind, name string) (string, bool) {
	if p, ok := f.globsOf(kind).match(name); ok {
		return fmt.Sprintf("%s pattern %q", kind, p), true
	}
	if p, ok := f.servers.match(server); ok {
		return fmt.Sprintf("servers pattern %q", p), true
	}
	if p, ok := f.methods.match(method); ok {
		return fmt.Sprintf("methods pattern %q", p), true
	}
	return "", false
}

func (f *filter) keep(method, server, kind, name string) bool {
	_, m := f.match(method, server, kind, name)
	return m == f.allow
}

// governed returns the methods of ms whose answer f may change: for allow
// every listing and client request (what does not match is hidden or
// refused) and upstream requests when methods is set; for deny those that
// some pattern could match.
func (f *filter) governed(ms []string) []string {
	out := []string{}
	for _, m := range ms {
		upstream := requestFromUpstream(m)
		var may bool
		switch {
		case f.allow:
			may = !upstream || f.haveMethods
		default:
			_, byMethod := f.methods.match(m)
			may = byMethod || len(f.servers) > 0
			switch m {
			case abi.MethodPromptsList, abi.MethodPromptsGet:
				may = may || len(f.prompts) > 0
			case abi.MethodResourcesList, abi.MethodResourceTemplatesList, abi.MethodResourcesRead, abi.MethodResourcesSubscribe:
				may = may || len(f.resources) > 0
			case abi.MethodComplete:
				may = may || len(f.prompts) > 0 || len(f.resources) > 0
			}
		}
		if may {
			out = append(out, m)
		}
	}
	return out
}

func requestFromUpstream(method string) bool { return contains(upstreamRequests, method) }

func (f *filter) toolsList(in *abi.ToolsListInput) (*abi.ToolsListOutput, error) {
	if !f.callers.applies(&in.Caller) {
		return &abi.ToolsListOutput{Tools: in.Tools}, nil
	}
	out := &abi.ToolsListOutput{Tools: make([]abi.Tool, 0, len(in.Tools))}
	for _, t := range in.Tools {
		if f.keep(methodToolsList, t.Server, kindTools, t.Name) {
			out.Tools = append(out.Tools, t)
		}
	}
	return out, nil
}

func (f *filter) toolCall(in *abi.ToolCallInput) (*abi.CallDecision, error) {
	if !f.callers.applies(&in.Caller) {
		return pdk.Allow(), nil
	}
	why, m := f.match(methodToolsCall, in.Server, kindTools, in.Name)
	switch {
	case f.allow && !m:
		return f.refuseCall("%s is not in the tools this gateway allows", in.Name), nil
	case !f.allow && m:
		return f.refuseCall("%s is blocked by the gateway's deny policy (%s)", in.Name, why), nil
	}
	return pdk.Allow(), nil
}

// listKind returns the kind of the entries of a listing, or "".
func listKind(method string) string {
	switch method {
	case abi.MethodPromptsList:
		return kindPrompts
	case abi.MethodResourcesList, abi.MethodResourceTemplatesList:
		return kindResources
	}
	return ""
}

func (f *filter) list(in *abi.ListInput) (*abi.ListOutput, error) {
	kind := listKind(in.Method)
	if kind == "" || !f.callers.applies(&in.Caller) {
		return nil, nil
	}
	out := &abi.ListOutput{Items: make([]abi.Item, 0, len(in.Items))}
	for _, it := range in.Items {
		if f.keep(in.Method, it.Server, kind, it.Name) {
			out.Items = append(out.Items, it)
		}
	}
	return out, nil
}

// requestKind returns the kind of what a request names, or "" when it
// names nothing (the requests upstreams send) or the method is unknown.
func requestKind(in *abi.RequestInput) string {
	switch in.Method {
	case abi.MethodPromptsGet:
		return kindPrompts
	case abi.MethodResourcesRead, abi.MethodResourcesSubscribe:
		return kindResources
	case abi.MethodComplete:
		return completionKind(in.Params)
	}
	return ""
}

// completionKind reads the reference type of completion/complete params:
// kindPrompts for "ref/prompt", kindResources for "ref/resource", "" for
// anything else.
func completionKind(params json.RawMessage) string {
	var p struct {
		Ref struct {
			Type string `json:"type"`
		} `json:"ref"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	switch p.Ref.Type {
	case "ref/prompt":
		return kindPrompts
	case "ref/resource":
		return kindResources
	}
	return ""
}

func (f *filter) request(in *abi.RequestInput) (*abi.RequestDecision, error) {
	if !f.callers.applies(&in.Caller) {
		return nil, nil
	}
	kind := requestKind(in)
	if f.allow && requestFromUpstream(in.Method) && !f.haveMethods {
		return nil, nil // allow judges these only when methods is set
	}
	why, m := f.match(in.Method, in.Server, kind, in.Name)
	subject := in.Name
	if subject == "" {
		subject = in.Method + " from " + in.Server
	}
	switch {
	case f.allow && !m && kind != "":
		return f.refuseRequest("%s is not in the %s this gateway allows", subject, kind), nil
	case f.allow && !m:
		return f.refuseRequest("%s is not in the methods this gateway allows", subject), nil
	case !f.allow && m:
		return f.refuseRequest("%s is blocked by the gateway's deny policy (%s)", subject, why), nil
	}
	return nil, nil
}

// denyRequest returns a request decision that refuses, with a formatted reason.
func denyRequest(format string, args ...any) *abi.RequestDecision {
	return &abi.RequestDecision{Action: abi.ActionDeny, Reason: fmt.Sprintf(format, args...)}
}

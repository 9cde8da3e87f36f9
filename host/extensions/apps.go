package extensions

import (
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP Apps (SEP-1865, io.modelcontextprotocol/ui): a tool names, in
// _meta.ui.resourceUri (and the older flat _meta["ui/resourceUri"]), a
// ui:// resource whose HTML a client renders; the client reads it with
// resources/read. Upstreams pick their ui:// URIs on their own, so two of
// them often use the same one (every example server of the extension
// serves "ui://<tool>/mcp-app.html"), and a server may leave UI resources
// out of resources/list. So mcphost serves every upstream's ui:// URIs
// under the upstream's name:
//
//	ui://get-time/mcp-app.html of server "clock" is ui://clock/get-time/mcp-app.html
//
// in tool _meta, resources/list, resources/read results and update
// notifications, and routes such a URI by its first part alone, whether
// or not the server listed it (RouteURI). The resource then goes through
// the resource routing and its policies as any other.

// UI is the MCP Apps extension's identifier.
const UI = "io.modelcontextprotocol/ui"

// UIMimeType is the MIME type of an MCP App's HTML.
const UIMimeType = "text/html;profile=mcp-app"

// uiScheme starts every MCP Apps resource URI.
const uiScheme = "ui://"

// apps carries MCP Apps. Its marks are on tools and resources, each from
// its own upstream: offered to clients when any upstream offers it. A
// shared session declares the HTML profile, so that servers which list
// UI tools only to clients that render them list them; a client that does
// not render them uses the tool's text content, as the extension asks of
// every UI tool.
var apps = Carrier{
	Name:   UI,
	Merge:  Union,
	Shared: map[string]any{"mimeTypes": []any{UIMimeType}},
}

// IsUI reports whether uri is an MCP Apps resource URI.
func IsUI(uri string) bool { return strings.HasPrefix(uri, uiScheme) }

// ExposeURI returns the URI under which mcphost serves server's uri: a
// ui:// URI gets the server's name (escaped) as its first part; any other
// URI is returned as it is.
func ExposeURI(server, uri string) string {
	if !IsUI(uri) {
		return uri
	}
	return uiScheme + escapeName(server) + "/" + uri[len(uiScheme):]
}

// RouteURI reverses ExposeURI. For an exposed ui:// URI it returns the
// server named in it and the URI that server uses; ui reports whether uri
// is a ui:// URI at all, and server is "" for one that names no server
// (not of ExposeURI's form), which nothing serves.
func RouteURI(uri string) (server, upstreamURI string, ui bool) {
	if !IsUI(uri) {
		return "", uri, false
	}
	rest := uri[len(uiScheme):]
	i := strings.IndexByte(rest, '/')
	if i <= 0 {
		return "", uri, true
	}
	name, err := url.PathUnescape(rest[:i])
	if err != nil || name == "" {
		return "", uri, true
	}
	return name, uiScheme + rest[i+1:], true
}

// UpstreamURI is the URI server uses for uri, an exposed URI routed to
// it: RouteURI's for a ui:// URI that names server, uri itself otherwise.
func UpstreamURI(server, uri string) string {
	if s, up, ui := RouteURI(uri); ui && s == server {
		return up
	}
	return uri
}

// escapeName percent-encodes every byte of a server name but the
// unreserved ones, so that it stands as a URI's authority and comes back
// whole from url.PathUnescape.
func escapeName(name string) string {
	plain := true
	for i := 0; i < len(name); i++ {
		if !unreserved(name[i]) {
			plain = false
			break
		}
	}
	if plain {
		return name
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if unreserved(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func unreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// The keys of a tool's _meta that name its UI resource.
const (
	metaUI         = "ui"
	metaUIResource = "resourceUri"
	metaUIFlat     = "ui/resourceUri" // deprecated by the extension, still sent by its SDK
)

// ExposeToolMeta returns a tool's _meta with its links to ui:// resources
// rewritten to server's exposed URIs (ExposeURI). meta is not changed; when
// nothing needs rewriting it is returned as it is.
func ExposeToolMeta(server string, meta map[string]any) map[string]any {
	ui, _ := meta[metaUI].(map[string]any)
	nested, _ := ui[metaUIResource].(string)
	flat, _ := meta[metaUIFlat].(string)
	if !IsUI(nested) && !IsUI(flat) {
		return meta
	}
	out := make(map[string]any, len(meta))
	for k, v := range meta {
		out[k] = v
	}
	if IsUI(nested) {
		u := make(map[string]any, len(ui))
		for k, v := range ui {
			u[k] = v
		}
		u[metaUIResource] = ExposeURI(server, nested)
		out[metaUI] = u
	}
	if IsUI(flat) {
		out[metaUIFlat] = ExposeURI(server, flat)
	}
	return out
}

// ExposeResource returns r as served under server's name: a copy with its
// URI exposed when it is a ui:// one, r itself otherwise.
func ExposeResource(server string, r *mcp.Resource) *mcp.Resource {
	if !IsUI(r.URI) {
		return r
	}
	cp := *r
	cp.URI = ExposeURI(server, r.URI)
	return &cp
}

// ExposeTemplate is ExposeResource for a resource template.
func ExposeTemplate(server string, t *mcp.ResourceTemplate) *mcp.ResourceTemplate {
	if !IsUI(t.URITemplate) {
		return t
	}
	cp := *t
	cp.URITemplate = ExposeURI(server, t.URITemplate)
	return &cp
}

// ExposeContents rewrites, in place, the ui:// URIs of what server
// answered to resources/read.
func ExposeContents(server string, res *mcp.ReadResourceResult) {
	if res == nil {
		return
	}
	for _, c := range res.Contents {
		if c != nil {
			c.URI = ExposeURI(server, c.URI)
		}
	}
}

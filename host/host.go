// Package host is where the serving core lived until 2026-11-28; it is now
// host/gateway, with the upstream side in host/upstream, naming in
// host/catalog and the HTTP edge in host/listener (docs/ARCHITECTURE.md).
// These aliases keep an embedder's code compiling for one release.
//
// Deprecated: import host/gateway (and host/upstream for ServerConfig).
package host

import (
	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// Deprecated: the names below moved; use the packages they alias.
type (
	Config       = gateway.Config
	Options      = gateway.Options
	Host         = gateway.Host
	Policy       = gateway.Policy
	ToolsOnly    = gateway.ToolsOnly
	Status       = upstream.Status
	ServerConfig = upstream.ServerConfig
)

// Deprecated: use the upstream package's constants.
const (
	TransportStdio          = upstream.TransportStdio
	TransportSSE            = upstream.TransportSSE
	TransportStreamableHTTP = upstream.TransportStreamableHTTP
	TransportInternal       = upstream.TransportInternal
	SessionsShared          = upstream.SessionsShared
	SessionsPerClient       = upstream.SessionsPerClient
	SessionsPerSession      = upstream.SessionsPerSession
)

// New is gateway.New.
//
// Deprecated: use gateway.New.
func New(cfg Config, opts *Options) (*Host, error) { return gateway.New(cfg, opts) }

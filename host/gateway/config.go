package gateway

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/codemode"
	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/quota"
	"github.com/mcphost-project/mcphost/host/search"
	"github.com/mcphost-project/mcphost/host/tasks"
	"github.com/mcphost-project/mcphost/host/toolset"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// Config is everything the host needs, as a Go value. The CLI decodes it from
// HCL (host/config); embedders build it directly.
type Config struct {
	Listen    listener.Config
	Servers   []upstream.ServerConfig // in config order, which is also tools/list order
	Tools     catalog.ToolsConfig     // also names prompts
	Resources catalog.ResourcesConfig
	// Quotas limit calls per identity (host/quota), checked in order;
	// none costs a call nothing.
	Quotas []quota.Quota
	// Code limits the scripts of code mode (Tools.Exposure ==
	// catalog.ExposureCode); zero fields take codemode's defaults.
	Code  codemode.Limits
	Tasks tasks.Limits // the MCP tasks the host runs itself, and their ids' key (host/tasks); read at New
	// Toolsets are served each at its own endpoint, /mcp/NAME (and
	// /sse/NAME): a subset of what /mcp serves (host/toolset).
	Toolsets []toolset.Toolset
}

// WithDefaults returns a copy of c with every unset field given its default.
func (c Config) WithDefaults() Config {
	c.Listen = c.Listen.WithDefaults()
	if c.Tools.Separator == "" {
		c.Tools.Separator = catalog.DefaultSeparator
	}
	if c.Tools.MaxNameLength == 0 {
		c.Tools.MaxNameLength = catalog.DefaultMaxNameLength
	}
	if c.Tools.Prefix == "" {
		c.Tools.Prefix = catalog.PrefixAlways
	}
	c.Code = c.Code.WithDefaults()
	if c.Resources.Conflict == "" {
		c.Resources.Conflict = catalog.ResourceConflictFirst
	}
	servers := make([]upstream.ServerConfig, len(c.Servers))
	for i, s := range c.Servers {
		servers[i] = s.WithDefaults()
	}
	c.Servers = servers
	c.Toolsets = toolset.WithDefaults(c.Toolsets)
	return c
}

// Validate reports every problem in c at once, for embedders that build a
// Config in Go. (The HCL decoder reports the same problems with source
// positions before a Config is ever built.)
func (c Config) Validate() error {
	var errs []error
	for _, err := range c.Listen.Check() {
		errs = append(errs, fmt.Errorf("host: listen: %w", err))
	}
	seen := make(map[string]bool, len(c.Servers))
	for i, s := range c.Servers {
		where := fmt.Sprintf("server %d (%q)", i, s.Name)
		if s.Name == "" {
			errs = append(errs, fmt.Errorf("host: %s: a name is required", where))
		}
		if seen[s.Name] {
			errs = append(errs, fmt.Errorf("host: %s: duplicate server name", where))
		}
		seen[s.Name] = true
		for _, err := range s.Check() {
			errs = append(errs, fmt.Errorf("host: %s: %w", where, err))
		}
		if s.OAuth != nil && s.OAuth.Grant == upstream.GrantTokenExchange && s.Transport == upstream.TransportStreamableHTTP && upstream.CheckOAuth(s.OAuth) == nil && !(upstream.CallerTokens(s.OAuth) && s.Sessions == upstream.SessionsShared) {
			if err := checkExchangeIssuer(c.Listen, s.OAuth); err != nil {
				errs = append(errs, fmt.Errorf("host: %s: oauth: %w", where, err))
			}
		}
	}
	seenQuota := make(map[string]bool, len(c.Quotas))
	for i, q := range c.Quotas {
		where := fmt.Sprintf("quota %d (%q)", i, q.Name)
		if seenQuota[q.Name] {
			errs = append(errs, fmt.Errorf("host: %s: duplicate quota name", where))
		}
		seenQuota[q.Name] = true
		for _, p := range q.Check() {
			errs = append(errs, fmt.Errorf("host: %s: %w", where, p))
		}
	}
	for _, err := range toolset.CheckAll(c.Toolsets) {
		errs = append(errs, fmt.Errorf("host: %w", err))
	}
	if c.Tools.Prefix != catalog.PrefixAlways && c.Tools.Prefix != catalog.PrefixNever {
		errs = append(errs, fmt.Errorf("host: tools: unknown prefix %q (want %q or %q)", c.Tools.Prefix, catalog.PrefixAlways, catalog.PrefixNever))
	}
	if err := search.CheckExposure(c.Tools); err != nil {
		errs = append(errs, fmt.Errorf("host: tools: %w", err))
	}
	for _, err := range c.Code.Check() {
		errs = append(errs, fmt.Errorf("host: tools: code: %w", err))
	}
	if c.Resources.Conflict != catalog.ResourceConflictFirst && c.Resources.Conflict != catalog.ResourceConflictError {
		errs = append(errs, fmt.Errorf("host: resources: unknown conflict %q (want %q or %q)", c.Resources.Conflict, catalog.ResourceConflictFirst, catalog.ResourceConflictError))
	}
	if c.Tools.Separator != catalog.Sanitize(c.Tools.Separator) {
		errs = append(errs, fmt.Errorf("host: tools: separator %q may only use A-Z, a-z, 0-9, _ and -", c.Tools.Separator))
	}
	if c.Tools.MaxNameLength < 16 {
		errs = append(errs, fmt.Errorf("host: tools: max_name_length %d is too small (at least 16)", c.Tools.MaxNameLength))
	}
	return errors.Join(errs...)
}

// checkExchangeIssuer requires callers whose tokens a token exchange server
// can exchange: listen.auth must take OAuth tokens from the issuer the
// server's oauth block trusts.
func checkExchangeIssuer(l listener.Config, o *upstream.UpstreamOAuth) error {
	if l.Auth == nil || l.Auth.OAuth == nil {
		return fmt.Errorf("the %s grant exchanges the callers' OAuth tokens: add listen.auth.oauth with issuer = %q", upstream.GrantTokenExchange, o.Issuer)
	}
	if strings.TrimSuffix(l.Auth.OAuth.Issuer, "/") != strings.TrimSuffix(o.Issuer, "/") {
		return fmt.Errorf("the %s grant exchanges tokens at issuer %q, but listen.auth.oauth takes tokens from %q: they must be the same", upstream.GrantTokenExchange, o.Issuer, l.Auth.OAuth.Issuer)
	}
	return nil
}

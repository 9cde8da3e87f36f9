package upstream

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/internal/secrets"
)

// The stages of a probe, in ProbeResult.Stage when one failed.
const (
	ProbeStageConfig  = "config"  // the definition is invalid; nothing was started
	ProbeStageConnect = "connect" // starting or reaching the server, or initialize
	ProbeStageList    = "list"    // listing its tools, prompts or resources
)

// probeServerName names a definition probed without a name.
const probeServerName = "test"

// ProbeResult is what Probe found: the server's identity, capabilities and
// listings, or the exact error of the stage that failed.
type ProbeResult struct {
	OK                bool                    `json:"ok"`
	ServerInfo        *mcp.Implementation     `json:"serverInfo,omitempty"`
	ProtocolVersion   string                  `json:"protocolVersion,omitempty"`
	Capabilities      *mcp.ServerCapabilities `json:"capabilities,omitempty"`
	Instructions      string                  `json:"instructions,omitempty"`
	Tools             []*mcp.Tool             `json:"tools"`
	Prompts           []*mcp.Prompt           `json:"prompts"`
	Resources         []*mcp.Resource         `json:"resources"`
	ResourceTemplates []*mcp.ResourceTemplate `json:"resourceTemplates"`
	Timing            ProbeTiming             `json:"timing"`
	Error             string                  `json:"error,omitempty"`
	Stage             string                  `json:"stage,omitempty"`  // ProbeStageConfig, ProbeStageConnect or ProbeStageList
	Stderr            string                  `json:"stderr,omitempty"` // last lines a stdio server printed, masked
}

// ProbeTiming is how long each stage of a probe took, in milliseconds.
// TotalMs covers the whole probe, ending the server included.
type ProbeTiming struct {
	ConnectMs float64 `json:"connectMs"`
	ListMs    float64 `json:"listMs"`
	TotalMs   float64 `json:"totalMs"`
}

// Probe connects to one server definition without adding it to a host,
// lists what it offers, and disconnects. It is the "test connection" of
// the admin API (POST /v1/servers:test) and of `mcphost servers test`.
//
// The server is reached exactly as a host reaches it (same transports,
// headers, OAuth, pinned protocol version, process group): cfg gets the
// host's defaults and validation, with the name "test" when it has none.
// Connecting and listing are bounded by cfg.ConnectTimeout, as a host's
// connect attempt is, and the whole probe by ctx. A stdio server's process
// group is ended before Probe returns, whatever happened.
//
// Probe never fails as a Go call: a problem is in the result (OK false,
// Stage and Error). Error is masked like a host's statuses, and the
// definition's header values and OAuth client secret are taken out of it.
// A failure to list prompts or resources fails the probe too (Stage
// ProbeStageList), with the tools already listed kept: a host would serve
// those tools and only log the failure. Server-to-client requests
// (sampling, elicitation, roots) are refused: a probe has no client to ask.
// log may be nil.
func Probe(ctx context.Context, cfg ServerConfig, log hclog.Logger) *ProbeResult {
	start := time.Now()
	res := &ProbeResult{
		Tools:             []*mcp.Tool{},
		Prompts:           []*mcp.Prompt{},
		Resources:         []*mcp.Resource{},
		ResourceTemplates: []*mcp.ResourceTemplate{},
	}
	defer func() { res.Timing.TotalMs = millis(time.Since(start)) }()
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if cfg.Name == "" {
		cfg.Name = probeServerName
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		// The definition's own words: masking for credentials would mangle
		// them ("oauth: grant" reads as one), and only a URL or a header
		// can hold one.
		res.OK, res.Stage = false, ProbeStageConfig
		res.Error = secrets.MaskURLs(redactKnown(err.Error(), cfg))
		return res
	}

	u := New(cfg, log.Named(cfg.Name), probeEvents{log: log})
	stage, err := res.run(ctx, u)
	// Closing ends the session and the server's process group and waits
	// for them, so the stderr tail is complete once it returns.
	u.Close()
	res.Stderr = redactKnown(u.stderrTail(), cfg) // masked line by line; then the definition's own values
	if err != nil {
		res.fail(stage, err, cfg)
		log.Debug("probe failed", "server", cfg.Name, "stage", stage, "error", res.Error)
		return res
	}
	res.OK = true
	return res
}

// run connects, fills res from what the server says, and closes the
// session; on failure it returns the stage and its error.
func (res *ProbeResult) run(parent context.Context, u *Server) (string, error) {
	ctx, cancel := context.WithTimeout(parent, u.Config.ConnectTimeout)
	defer cancel()
	explain := func(err error) error {
		if ctx.Err() != nil && parent.Err() == nil {
			// Say which bound ended it: "context deadline exceeded" alone
			// does not, and the error may not even say that much.
			return fmt.Errorf("no answer within connect_timeout (%s): %w", u.Config.ConnectTimeout, err)
		}
		return err
	}

	t0 := time.Now()
	cs, err := u.connectWith(ctx, u.client, u.oauth)
	res.Timing.ConnectMs = millis(time.Since(t0))
	if err != nil {
		return ProbeStageConnect, fmt.Errorf("connecting: %w", explain(err))
	}
	defer cs.Close()
	if ir := cs.InitializeResult(); ir != nil {
		res.ServerInfo = ir.ServerInfo
		res.ProtocolVersion = ir.ProtocolVersion
		res.Capabilities = ir.Capabilities
		res.Instructions = ir.Instructions
	}

	t1 := time.Now()
	defer func() { res.Timing.ListMs = millis(time.Since(t1)) }()
	tools, err := listTools(ctx, cs)
	if err != nil {
		return ProbeStageList, fmt.Errorf("listing tools: %w", explain(err))
	}
	res.Tools = orEmpty(tools)
	feats, err := listFeatures(ctx, u.Config.Name, cs)
	if err != nil { // its own message says which list
		return ProbeStageList, explain(err)
	}
	res.Prompts = orEmpty(feats.Prompts)
	res.Resources = orEmpty(feats.Resources)
	res.ResourceTemplates = orEmpty(feats.Templates)
	return "", nil
}

// fail records the failure of stage, its error masked (see probeMask).
func (res *ProbeResult) fail(stage string, err error, cfg ServerConfig) {
	res.OK = false
	res.Stage = stage
	res.Error = ProbeMask(err.Error(), cfg)
}

// ProbeMask masks text as a host's statuses are (errorText), after taking
// out the definition's own secrets (redactKnown).
func ProbeMask(text string, cfg ServerConfig) string {
	return secrets.MaskText(redactKnown(text, cfg)) // as errorText
}

// redactKnown takes the definition's own secrets out of text word for
// word: its env and header values (and the credentials after an auth
// scheme such as "Bearer"), its OAuth client secret, and its marked
// secrets (redactMarked). Values shorter than minSecret are left alone,
// so that a header such as "X-Debug: 1" does not blank every digit of the
// message.
func redactKnown(text string, cfg ServerConfig) string {
	var known []string
	for _, v := range cfg.Env {
		known = append(known, v)
	}
	for _, v := range cfg.Headers {
		known = append(known, v)
		if _, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
			known = append(known, cred)
		}
	}
	if cfg.OAuth != nil {
		known = append(known, cfg.OAuth.ClientSecret)
	}
	return redactValues(text, append(known, markedSecrets(cfg)...))
}

// redactMarked takes out of text the secrets the admin API marked: the
// args SecretArgs lists and, under SecretURL, the URL and its path. A
// server's status passes through it; env values, often plain words
// (NODE_ENV=production), are left to the patterns of errorText there.
func redactMarked(text string, cfg ServerConfig) string {
	return redactValues(text, markedSecrets(cfg))
}

func markedSecrets(cfg ServerConfig) []string {
	var known []string
	for _, i := range cfg.SecretArgs {
		if i >= 0 && i < len(cfg.Args) {
			known = append(known, cfg.Args[i])
		}
	}
	if cfg.SecretURL {
		known = append(known, cfg.URL)
		if u, err := url.Parse(cfg.URL); err == nil {
			known = append(known, u.Path, u.EscapedPath())
		}
	}
	return known
}

// markedError is an upstream's error with the definition's marked
// secrets taken out of its text (redactMarked): a failed connection quotes
// the URL, and the text reaches clients. errors.Is and As see the error
// it wraps.
type markedError struct {
	err  error
	text string
}

func (e *markedError) Error() string { return e.text }
func (e *markedError) Unwrap() error { return e.err }

// MaskMarked returns err with u's marked secrets taken out of its text;
// err itself when it holds none.
func (u *Server) MaskMarked(err error) error {
	if err == nil || (len(u.Config.SecretArgs) == 0 && !u.Config.SecretURL) {
		return err
	}
	if text := redactMarked(err.Error(), u.Config); text != err.Error() {
		return &markedError{err: err, text: text}
	}
	return err
}

// redactValues replaces each of values (trimmed, minSecret bytes or more)
// in text with [REDACTED].
func redactValues(text string, values []string) string {
	const minSecret = 4
	var known []string
	for _, v := range values {
		if v = strings.TrimSpace(v); len(v) >= minSecret {
			known = append(known, v)
		}
	}
	// Longest first, so a value containing another goes whole.
	slices.SortFunc(known, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for _, v := range known {
		text = strings.ReplaceAll(text, v, "[REDACTED]")
	}
	return text
}

func millis(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}

// orEmpty returns s, or an empty slice for nil, so that JSON has [] and
// not null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// probeEvents are a probe's Events: nothing downstream hears of
// changes, and what the server asks of a client is refused.
type probeEvents struct {
	env *OAuthEnv // logins, for `mcphost auth login`; nil for a probe
	log hclog.Logger
}

func (e probeEvents) OAuthEnv() *OAuthEnv  { return e.env }
func (probeEvents) ToolsChanged(string)    {}
func (probeEvents) Shortcuts() bool        { return true }
func (probeEvents) FeaturesChanged(string) {}
func (probeEvents) Progress(context.Context, *Server, *mcp.ProgressNotificationParams) {
}
func (probeEvents) LogMessage(*Server, *mcp.ClientSession, *mcp.LoggingMessageParams) {}
func (probeEvents) ResourceUpdated(*Server, *mcp.ClientSession, *mcp.ResourceUpdatedNotificationParams) {
}
func (probeEvents) TaskStatus(*Server, *mcp.ClientSession, json.RawMessage) {}

func (probeEvents) ElicitationComplete(*Server, *mcp.ClientSession, *mcp.ElicitationCompleteParams) {
}

func (e probeEvents) ServerRequest(_ context.Context, u *Server, _ *mcp.ClientSession, method string, _ mcp.Request) (mcp.Result, error) {
	e.log.Debug("server-to-client request refused during a probe", "server", u.Config.Name, "method", method)
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
		Message: fmt.Sprintf("mcphost: %s refused: this is a connection test, with no client to ask", method)}
}

func (probeEvents) ClientSessionStarted(context.Context, *Server, *mcp.ServerSession, *mcp.ClientSession) {
}
func (probeEvents) Identity(*mcp.ServerSession) *auth.Identity       { return nil }
func (probeEvents) LatestIdentity(*mcp.ServerSession) *auth.Identity { return nil }
func (probeEvents) SessionLive(*mcp.ServerSession) bool              { return false }
func (probeEvents) CallerSecrets(_ context.Context, server string, _ *auth.Identity, _ []string) (map[string]CallerSecret, error) {
	return nil, fmt.Errorf("server %q reads a caller's secrets, and a probe has no caller", server)
}
func (probeEvents) Drained() bool { return false }

var _ Events = probeEvents{}

// Package metrics exposes what an mcphost does as Prometheus metrics: every
// tools/call by server, tool and outcome with its latency (as a
// host.Observer), and, read at each scrape so that calls pay nothing for
// them, the upstreams' state, the downstream sessions, the plugins'
// counters, and the Go runtime and process. docs/metrics.md lists them.
package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/audit"
	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// PluginStatus is what the metrics read of one plugin.
type PluginStatus struct {
	Name                             string
	Loaded                           bool
	Calls, Reused, Failures, Crashes uint64
	IdleInstances, BusyInstances     int
}

// HookStatus is what the metrics read of one hook of one plugin.
type HookStatus struct {
	Plugin, Hook                     string
	Calls, Failures, Traps, Timeouts uint64
	Bounds                           []float64 // latency bucket upper bounds, seconds
	Buckets                          []uint64  // cumulative counts per bound
	Sum                              float64   // seconds
}

// Sources are read at each scrape. Any may be nil.
type Sources struct {
	Hooks     func() []HookStatus
	Upstreams func() []upstream.Status
	Sessions  func() map[string]int // by transport
	Plugins   func() []PluginStatus
	Swaps     func() uint64 // plugin chain generations swapped in
	Audit     func() audit.Stats
}

// Metrics is a Prometheus registry with mcphost's metrics. It is a
// host.Observer; Handler serves the exposition.
type Metrics struct {
	seenMu sync.Mutex
	seen   sync.Map // toolKey -> struct{}: tools with series, for CatalogChanged

	reg      *prometheus.Registry
	calls    *prometheus.CounterVec
	total    *prometheus.HistogramVec
	upstream *prometheus.HistogramVec
	policy   *prometheus.HistogramVec
	builds   *prometheus.CounterVec
	buildDur prometheus.Histogram
	quotas   *prometheus.CounterVec
}

// Buckets of the call latency histograms, in seconds: a gateway hop is
// around a millisecond, a slow tool tens of seconds.
var buckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// New returns the metrics; call Watch once the host exists.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcphost_tool_calls_total",
			Help: "tools/call requests answered, by server, tool and outcome (ok, tool_error, upstream_error, timeout, denied, answered, unknown_tool, invalid, quota).",
		}, []string{"server", "tool", "outcome"}),
		total: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcphost_tool_call_duration_seconds",
			Help:    "Time from a tools/call's arrival in the host to its answer, policies and upstream included, by server.",
			Buckets: buckets,
		}, []string{"server"}),
		upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcphost_upstream_call_duration_seconds",
			Help:    "Time a tools/call waited on its server, by server.",
			Buckets: buckets,
		}, []string{"server"}),
		policy: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcphost_policy_call_duration_seconds",
			Help:    "Time a tools/call spent in the tool_call and tool_result policy hooks, by server.",
			Buckets: buckets,
		}, []string{"server"}),
	}
	m.builds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcphost_tools_list_builds_total",
		Help: "Tool listings computed through the policies for a caller (cache misses), by result (ok, error).",
	}, []string{"result"})
	m.buildDur = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "mcphost_tools_list_build_duration_seconds",
		Help:    "Time to compute a caller's tool listing through the policies.",
		Buckets: buckets,
	})
	m.quotas = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcphost_quota_refusals_total",
		Help: "tools/call requests a quota refused, by quota and kind of limit (calls, concurrent).",
	}, []string{"quota", "kind"})
	m.reg.MustRegister(m.calls, m.total, m.upstream, m.policy, m.builds, m.buildDur, m.quotas,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ToolCall implements host.Observer.
func (m *Metrics) ToolCall(server, tool, outcome string, t gateway.CallTimes) {
	if tool != "" {
		k := toolKey{server, tool}
		if _, ok := m.seen.Load(k); !ok { // read-mostly: no lock on the call path
			m.seen.Store(k, struct{}{})
		}
	}
	m.calls.WithLabelValues(server, tool, outcome).Inc()
	m.total.WithLabelValues(server).Observe(t.Total.Seconds())
	if t.Upstream > 0 {
		m.upstream.WithLabelValues(server).Observe(t.Upstream.Seconds())
	}
	if t.Policy > 0 {
		m.policy.WithLabelValues(server).Observe(t.Policy.Seconds())
	}
}

// QuotaRefused implements gateway.QuotaObserver.
func (m *Metrics) QuotaRefused(quota, kind string) {
	m.quotas.WithLabelValues(quota, kind).Inc()
}

// toolKey is one tool's labels.
type toolKey struct{ server, tool string }

// CatalogChanged implements host.CatalogObserver: the series of a tool
// that left the catalog (its server dropped it, or the server went) are
// deleted, and a server's once it has no tool left, so that scrapes do not
// carry them for ever. A tool that comes back starts again from zero,
// which Prometheus' rate and increase read as a counter reset.
func (m *Metrics) CatalogChanged(tools []abi.Tool) {
	now := make(map[toolKey]bool, len(tools))
	servers := map[string]bool{}
	for _, t := range tools {
		now[toolKey{t.Server, t.Tool}] = true
		servers[t.Server] = true
	}
	m.seenMu.Lock() // one CatalogChanged at a time
	defer m.seenMu.Unlock()
	for key := range m.seen.Range {
		k := key.(toolKey)
		if now[k] {
			continue
		}
		m.seen.Delete(k)
		m.calls.DeletePartialMatch(prometheus.Labels{"server": k.server, "tool": k.tool})
		if !servers[k.server] {
			for _, v := range []*prometheus.HistogramVec{m.total, m.upstream, m.policy} {
				v.DeleteLabelValues(k.server)
			}
		}
	}
}

// ToolsListBuilt implements host.Observer.
func (m *Metrics) ToolsListBuilt(d time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.builds.WithLabelValues(result).Inc()
	m.buildDur.Observe(d.Seconds())
}

// Watch registers the metrics read from src at each scrape.
func (m *Metrics) Watch(src Sources) {
	m.reg.MustRegister(&stateCollector{src: src})
}

// Registry is the registry, for an embedder's own metrics.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the exposition (text, or OpenMetrics when asked).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, EnableOpenMetrics: true})
}

var (
	upstreamConnected = prometheus.NewDesc("mcphost_upstream_connected",
		"1 when the server's shared session is connected, else 0.", []string{"server", "transport"}, nil)
	upstreamState = prometheus.NewDesc("mcphost_upstream_state",
		"1 for the server's current state (connecting, connected, disconnected, failed), 0 for the others.", []string{"server", "state"}, nil)
	upstreamReconnects = prometheus.NewDesc("mcphost_upstream_reconnects_total",
		"Times the server's session was connected again after being lost.", []string{"server"}, nil)
	upstreamTools = prometheus.NewDesc("mcphost_upstream_tools",
		"Tools the server lists.", []string{"server"}, nil)
	upstreamInFlight = prometheus.NewDesc("mcphost_upstream_calls_in_flight",
		"Calls waiting on the server now.", []string{"server"}, nil)
	upstreamClients = prometheus.NewDesc("mcphost_upstream_client_sessions",
		"Per-client upstream sessions the server holds (sessions = per_client or per_session).", []string{"server"}, nil)
	sessions = prometheus.NewDesc("mcphost_downstream_sessions",
		"Downstream MCP sessions open, by transport.", []string{"transport"}, nil)
	pluginLoaded = prometheus.NewDesc("mcphost_plugin_loaded",
		"1 when the plugin is loaded and serving, else 0.", []string{"plugin"}, nil)
	pluginCalls = prometheus.NewDesc("mcphost_plugin_calls_total",
		"Hook calls that ran the plugin's guest.", []string{"plugin"}, nil)
	pluginReused = prometheus.NewDesc("mcphost_plugin_reused_total",
		"Hook calls answered from the plugin's hints without running it.", []string{"plugin"}, nil)
	pluginFailures = prometheus.NewDesc("mcphost_plugin_failures_total",
		"Hook calls that failed, of any kind.", []string{"plugin"}, nil)
	pluginCrashes = prometheus.NewDesc("mcphost_plugin_crashes_total",
		"Instances thrown away after a trap, a timeout or an exit.", []string{"plugin"}, nil)
	pluginInstances = prometheus.NewDesc("mcphost_plugin_instances",
		"The plugin's instances: idle (warm, waiting for a call) and busy (taken by a call).", []string{"plugin", "state"}, nil)
	hookCalls = prometheus.NewDesc("mcphost_plugin_hook_calls_total",
		"Guest calls of a plugin's hook.", []string{"plugin", "hook"}, nil)
	hookFailures = prometheus.NewDesc("mcphost_plugin_hook_failures_total",
		"Guest calls of a plugin's hook that failed, by kind (trap, timeout, other).", []string{"plugin", "hook", "kind"}, nil)
	hookDuration = prometheus.NewDesc("mcphost_plugin_hook_duration_seconds",
		"Time of a guest call of a plugin's hook, waiting for an instance included.", []string{"plugin", "hook"}, nil)
	swaps = prometheus.NewDesc("mcphost_plugin_chain_generation",
		"The generation of the plugin chain in use; it grows by one at each hot swap.", nil, nil)
	auditWritten = prometheus.NewDesc("mcphost_audit_lines_written_total",
		"Audit lines written, by sink (file: the file or stdout; store: the database).", []string{"sink"}, nil)
	auditDropped = prometheus.NewDesc("mcphost_audit_lines_dropped_total",
		"Audit lines lost, by sink: the writer's queue was full, or the sink failed.", []string{"sink"}, nil)
	auditRedactFailed = prometheus.NewDesc("mcphost_audit_redact_failures_total",
		"Audit lines written without their arguments and result because masking them failed.", nil, nil)
)

var states = []upstream.State{upstream.StateConnecting, upstream.StateConnected, upstream.StateDisconnected, upstream.StateFailed,
	upstream.StateAuthorizing, upstream.StateUnauthorized}

// stateCollector reads the host's and the plugins' state at each scrape.
// The plugins' counters restart with each generation of a plugin, so
// they are exposed as what they are: counters that may reset.
type stateCollector struct{ src Sources }

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{upstreamConnected, upstreamState, upstreamReconnects, upstreamTools, upstreamInFlight,
		upstreamClients, sessions, pluginLoaded, pluginCalls, pluginReused, pluginFailures, pluginCrashes, pluginInstances,
		hookCalls, hookFailures, hookDuration, swaps, auditWritten, auditDropped, auditRedactFailed} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	if c.src.Upstreams != nil {
		for _, s := range c.src.Upstreams() {
			gauge(upstreamConnected, b2f(s.State == upstream.StateConnected), s.Name, s.Transport)
			for _, st := range states {
				gauge(upstreamState, b2f(s.State == st), s.Name, string(st))
			}
			counter(upstreamReconnects, float64(s.Reconnects), s.Name)
			gauge(upstreamTools, float64(s.Tools), s.Name)
			gauge(upstreamInFlight, float64(s.InFlight), s.Name)
			gauge(upstreamClients, float64(s.ClientSessions), s.Name)
		}
	}
	if c.src.Sessions != nil {
		for transport, n := range c.src.Sessions() {
			gauge(sessions, float64(n), transport)
		}
	}
	if c.src.Plugins != nil {
		for _, p := range c.src.Plugins() {
			gauge(pluginLoaded, b2f(p.Loaded), p.Name)
			counter(pluginCalls, float64(p.Calls), p.Name)
			counter(pluginReused, float64(p.Reused), p.Name)
			counter(pluginFailures, float64(p.Failures), p.Name)
			counter(pluginCrashes, float64(p.Crashes), p.Name)
			gauge(pluginInstances, float64(p.IdleInstances), p.Name, "idle")
			gauge(pluginInstances, float64(p.BusyInstances), p.Name, "busy")
		}
	}
	if c.src.Hooks != nil {
		for _, h := range c.src.Hooks() {
			counter(hookCalls, float64(h.Calls), h.Plugin, h.Hook)
			counter(hookFailures, float64(h.Traps), h.Plugin, h.Hook, "trap")
			counter(hookFailures, float64(h.Timeouts), h.Plugin, h.Hook, "timeout")
			counter(hookFailures, float64(h.Failures-h.Traps-h.Timeouts), h.Plugin, h.Hook, "other")
			buckets := make(map[float64]uint64, len(h.Bounds))
			for i, b := range h.Bounds {
				buckets[b] = h.Buckets[i]
			}
			ch <- prometheus.MustNewConstHistogram(hookDuration, h.Calls, h.Sum, buckets, h.Plugin, h.Hook)
		}
	}
	if c.src.Swaps != nil {
		gauge(swaps, float64(c.src.Swaps()))
	}
	if c.src.Audit != nil {
		st := c.src.Audit()
		counter(auditWritten, float64(st.FileWritten), "file")
		counter(auditWritten, float64(st.StoreWritten), "store")
		counter(auditDropped, float64(st.FileDropped), "file")
		counter(auditDropped, float64(st.StoreDropped), "store")
		counter(auditRedactFailed, float64(st.RedactFailed))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var _ gateway.QuotaObserver = (*Metrics)(nil)

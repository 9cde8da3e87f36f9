//go:build mcphost_extism

package plugins

// The Extism go-sdk engine: the original implementation, kept behind the
// mcphost_extism build tag to compare against the native engine
// (engine_native.go) in benchmarks. Not for production use: every call
// looks up kernel functions by name and pays a nested wasm call (and a
// goroutine) per kernel access.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/mcphost-project/mcphost/plugins/internal/extismhost"
	"github.com/mcphost-project/mcphost/plugins/internal/rootfs"
)

type compiled struct {
	cp *extism.CompiledPlugin
}

func (c *compiled) close(ctx context.Context) error { return c.cp.Close(ctx) }

func (rt *Runtime) initEngine() { setGuestLogLevel(rt.log) }

func (rt *Runtime) compile(ctx context.Context, wasm []byte) (*compiled, error) {
	// Guarded as the native engine guards modules it cannot rewrite
	// (extismhost.WithEntryGuard): wazero checks loops, a listener function
	// entries.
	cp, err := extism.NewCompiledPlugin(extismhost.WithEntryGuard(ctx),
		extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: wasm}}},
		extism.PluginConfig{RuntimeConfig: rt.guardCfg, EnableWasi: true, EnableHttpResponseHeaders: true},
		nil)
	if err != nil {
		return nil, err
	}
	return &compiled{cp: cp}, nil
}

type instance struct {
	p      *extism.Plugin
	lim    *memLimiter
	stderr *guestOutput
	usedAt time.Time // when it was made or last returned to the pool
}

func (in *instance) close() {
	_ = in.p.Close(context.Background())
}

// fusesBuiltins: the go-sdk binds an instance's configuration when it
// makes the instance, so each built-in keeps a pool of its own.
const fusesBuiltins = false

// useEnv is never called under this engine (fusesBuiltins).
func (in *instance) useEnv(*extismhost.Env) {}

func (in *instance) exports() map[string]bool {
	m := map[string]bool{}
	for name := range in.p.Module().ExportedFunctions() {
		m[name] = true
	}
	return m
}

// files goes unused: the go-sdk instantiates WASI itself, so a guest past
// rootfs.MaxOpenFiles sees EIO here, not EMFILE (extismhost/wasi.go).
func (p *Plugin) instantiate(ctx context.Context, lim *memLimiter, stderr *guestOutput, mc wazero.ModuleConfig, _ *rootfs.OpenFiles) (*instance, error) {
	ep, err := p.mod.cm.cp.Instance(experimental.WithMemoryAllocator(ctx, lim), extism.PluginInstanceConfig{ModuleConfig: mc})
	if err != nil {
		return nil, err
	}
	ep.Config = p.src.config
	ep.AllowedHosts = p.spec.AllowedHosts
	ep.AllowedPaths = p.spec.AllowedPaths
	log := p.log
	ep.SetLogger(func(level extism.LogLevel, msg string) {
		if level == extism.LogLevelDebug && strings.HasPrefix(msg, "Calling ") {
			return // Extism's own note of every call
		}
		switch level {
		case extism.LogLevelTrace:
			log.Trace(msg)
		case extism.LogLevelDebug:
			log.Debug(msg)
		case extism.LogLevelInfo:
			log.Info(msg)
		case extism.LogLevelWarn:
			log.Warn(msg)
		default:
			log.Error(msg)
		}
	})
	return &instance{p: ep, lim: lim, stderr: stderr}, nil
}

// invoke runs export with input. errMsg is the message the guest set with
// error_set; err is an engine error (trap, exit, timeout).
func (in *instance) invoke(ctx context.Context, export string, input []byte) (rc uint32, out []byte, errMsg string, exited bool, err error) {
	in.lim.enter()
	defer in.lim.leave() // after reading the error, which reads guest memory
	rc, out, err = in.p.CallWithContext(ctx, export, input)
	if err != nil {
		if msg := in.p.GetErrorWithContext(ctx); msg != "" && msg == err.Error() {
			return rc, nil, msg, false, nil
		}
	}
	return rc, out, "", false, err
}

var logLevelMu sync.Mutex

// setGuestLogLevel lowers Extism's process-wide guest log level (its only
// knob; guests ask it before formatting a message) to what log wants,
// Debug at most.
// hclog filters again, per logger.
func setGuestLogLevel(log hclog.Logger) {
	var want extism.LogLevel
	switch l := log.GetLevel(); {
	case l == hclog.Off || l == hclog.NoLevel:
		return
	case l <= hclog.Debug:
		// Not Trace: Extism logs its own trace messages to the standard
		// logger before an instance has ours.
		want = extism.LogLevelDebug
	case l == hclog.Info:
		want = extism.LogLevelInfo
	case l == hclog.Warn:
		want = extism.LogLevelWarn
	default:
		want = extism.LogLevelError
	}
	logLevelMu.Lock()
	defer logLevelMu.Unlock()
	if guestLogLevel == 0 || want < guestLogLevel {
		guestLogLevel = want
		extism.SetLogLevel(want)
	}
}

var guestLogLevel extism.LogLevel

var _ = errors.New

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/bench"
)

// Versions of the npm gateways measured; pinned so runs compare.
const (
	supergatewayVersion = "4.0.0"
	mcpProxyVersion     = "6.7.19"
)

// The mcp-go gateway, a stand-in for TBXark/mcp-proxy (whose module the Go
// module proxy here refuses): its directory, the mcp-go version its go.mod
// requires (the newest found in a go.mod of mcp-proxy's source, a fork's
// copy), and its row's name.
const (
	mcpgoDir     = "internal/bench/peers/mcpgo"
	mcpgoVersion = "v0.39.1"
	nameMCPGo    = "mcp-go gateway (stand-in for TBXark/mcp-proxy), stdio upstream"
)

// protocolVersion is what every bench client asks for, so all targets speak
// the same revision (the node gateways do not know 2026-07-28); the rows
// named with newProtocolSuffix ask for newProtocol, sessionless.
const (
	protocolVersion   = "2025-11-25"
	newProtocol       = "2026-07-28"
	newProtocolSuffix = ", 2026-07-28 client"
)

// callTarget is one way of reaching the everything-server's tool.
type callTarget struct {
	Name string
	Note string
	proc *bench.Process // whose RSS is reported: the gateway, or the server when direct
	// upstream is a server outside the gateway's process group whose CPU
	// counts as the target's (the HTTP upstream).
	upstream *bench.Process
	sess     *mcp.ClientSession
	version  string // the protocol its client asks for; protocolVersion when empty
	tool     string
	err      error // set when a measurement failed; the target is dropped
}

const (
	directName = "direct (go-sdk server, streamable HTTP)"
	nameB      = "mcphost B (-mcphost-b), stdio upstream, no plugins"
)

// measureCalls sets up every target, then measures them round-robin.
func (h *harness) measureCalls(ctx context.Context) error {
	direct, err := h.startEverythingHTTP(ctx, false)
	if err != nil {
		return err
	}
	targets := []*callTarget{{Name: directName, proc: direct.proc}}
	urls := []string{direct.url}
	add := func(name, note string, g *gateway, err error) {
		if err != nil {
			h.note("%s skipped: %v", name, firstLine(err))
			return
		}
		targets = append(targets, &callTarget{Name: name, Note: note, proc: g.proc})
		urls = append(urls, g.url)
	}
	withUpstream := func(p *bench.Process) {
		if t := targets[len(targets)-1]; t.Name != directName {
			t.upstream = p
		}
	}
	stdioUp := []server{{name: "everything", transport: "stdio", command: []string{h.bins.everything}}}
	cache := filepath.Join(h.work, "cache-calls")
	g, err := h.startMcphost(ctx, "calls-plain", cache, stdioUp, "")
	add("mcphost, stdio upstream, no plugins", "", g, err)
	if !h.o.noNewProtocol {
		// The same, asked by a client of the stateless revision (no
		// session; every request on its own). Direct, that needs the
		// server stateless: its stateful handler answers such a client
		// at 2025-11-25.
		if d26, err := h.startEverythingHTTP(ctx, true); err != nil {
			h.note("%s skipped: %v", directName+newProtocolSuffix, firstLine(err))
		} else {
			targets = append(targets, &callTarget{Name: directName + newProtocolSuffix, Note: "everything-server -stateless=true", proc: d26.proc, version: newProtocol})
			urls = append(urls, d26.url)
		}
		if err == nil {
			targets = append(targets, &callTarget{Name: "mcphost, stdio upstream, no plugins" + newProtocolSuffix, proc: g.proc, version: newProtocol})
			urls = append(urls, g.url)
		}
	}
	if h.chain != "" {
		g, err = h.startMcphost(ctx, "calls-chain", cache, stdioUp, h.chain)
		add("mcphost, stdio upstream, quickstart chain", "", g, err)
	}
	if h.o.mcphostB != "" {
		bin, err := filepath.Abs(h.o.mcphostB)
		if err == nil {
			g, err = h.startMcphostBin(ctx, bin, "calls-b", cache, stdioUp, "")
		}
		add(nameB, "-mcphost-b "+h.o.mcphostB, g, err)
		if err == nil && !h.o.noNewProtocol {
			// B's 2026-07-28 path beside A's, in the same rounds.
			targets = append(targets, &callTarget{Name: nameB + newProtocolSuffix, Note: "-mcphost-b " + h.o.mcphostB, proc: g.proc, version: newProtocol})
			urls = append(urls, g.url)
		}
	}
	httpUp := []server{{name: "everything", transport: "streamable-http", url: direct.url}}
	g, err = h.startMcphost(ctx, "calls-http", cache, httpUp, "")
	add("mcphost, HTTP upstream, no plugins", "upstream is the direct server", g, err)
	withUpstream(direct.proc)
	if !h.o.noNPM {
		sg, mp, err := h.installNPM(ctx)
		if err != nil {
			h.note("npm gateways skipped: %v", firstLine(err))
		} else {
			g, err = h.startSupergateway(ctx, sg)
			add("supergateway "+supergatewayVersion+", stdio upstream", "stateful streamable HTTP", g, err)
			g, err = h.startMCPProxy(ctx, mp)
			add("mcp-proxy "+mcpProxyVersion+", stdio upstream", "streamable HTTP", g, err)
		}
	}
	if !h.o.noMCPGo {
		err := h.mcpgoErr
		if err == nil {
			g, err = h.startMCPGo(ctx)
		}
		add(nameMCPGo, "mcp-go "+mcpgoVersion+", stateful streamable HTTP, "+mcpgoDir, g, err)
	}

	// One session per target, kept across rounds like a real client's.
	for i, t := range targets {
		version := protocolVersion
		if t.version != "" {
			version = t.version
		}
		target := bench.Target{Transport: bench.TransportStreamable, URL: urls[i], ProtocolVersion: version}
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		cs, err := target.Connect(cctx)
		if err == nil {
			t.tool, err = resolveTool(cctx, cs, h.o.tool)
		}
		if err == nil && t.version != "" && cs.InitializeResult().ProtocolVersion != t.version {
			h.note("%s: asked for %s, negotiated %s", t.Name, t.version, cs.InitializeResult().ProtocolVersion)
		}
		cancel()
		if err != nil {
			if i == 0 {
				return fmt.Errorf("direct target: %w", err)
			}
			h.note("%s skipped: %v", t.Name, firstLine(err))
			t.err = err
			continue
		}
		t.sess = cs
		defer cs.Close()
	}

	r := &h.report
	r.Calls.Tool = h.o.tool
	r.Calls.CallsPerRound = h.o.calls
	r.Calls.Warmup = h.o.warmup
	r.Calls.Rounds = h.o.rounds
	r.Calls.Concurrency = h.o.concurrency
	for _, t := range targets {
		r.Calls.Targets = append(r.Calls.Targets, TargetInfo{Name: t.Name, Note: t.Note})
	}
	for round := range h.o.rounds {
		for _, c := range h.o.concurrency {
			// Rotate the order each round so no target always runs first.
			for k := range targets {
				t := targets[(k+round)%len(targets)]
				if t.sess == nil || t.err != nil {
					continue
				}
				before := cpuNow(t.proc, t.upstream)
				res, err := bench.Run(ctx, t.sess, bench.Options{Tool: t.tool, Calls: h.o.calls, Concurrency: c, Warmup: h.o.warmup})
				used := cpuNow(t.proc, t.upstream).sub(before)
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					if t.Name == directName {
						return fmt.Errorf("direct target failed: %w", err)
					}
					t.err = err
					h.note("%s dropped after round %d: %v", t.Name, round+1, firstLine(err))
					continue
				}
				rss, _ := bench.RSS(t.proc.PID())
				anon, file, _ := bench.RSSParts(t.proc.PID())
				r.Calls.Samples = append(r.Calls.Samples, CallSample{Round: round + 1, Target: t.Name, Concurrency: c, Result: res, RSS: rss,
					RSSAnon: anon, RSSFile: file, Calls: res.Calls + h.o.warmup, CPU: used})
			}
		}
		h.logf("calls: round %d/%d done (load %s)", round+1, h.o.rounds, loadavg())
	}
	for _, t := range targets {
		if t.proc != nil {
			if hwm, err := bench.PeakRSS(t.proc.PID()); err == nil {
				r.Calls.PeakRSS = append(r.Calls.PeakRSS, NamedBytes{Name: t.Name, Bytes: hwm})
			}
		}
	}
	return nil
}

func (h *harness) startEverythingHTTP(ctx context.Context, stateless bool) (*gateway, error) {
	addr, err := bench.FreePort()
	if err != nil {
		return nil, err
	}
	p, err := h.start(h.bins.everything, []string{"-http=" + addr, fmt.Sprintf("-stateless=%v", stateless)})
	if err != nil {
		return nil, err
	}
	url := "http://" + addr + "/mcp"
	if _, err := p.WaitHTTP(ctx, 30*time.Second, url); err != nil {
		return nil, err
	}
	return &gateway{proc: p, url: url}, nil
}

func (h *harness) nodeBinary() string {
	if h.o.node != "" {
		return h.o.node
	}
	if p := filepath.Join(h.repo, ".ci", ".cache", "bin", "node"); fileExists(p) {
		return p
	}
	return "node"
}

// installNPM installs the npm gateways into the cache directory (not
// globally) unless they are there already, and returns their entry points.
func (h *harness) installNPM(ctx context.Context) (supergateway, mcpProxy string, err error) {
	dir := h.o.npmCache
	sg := filepath.Join(dir, "node_modules", "supergateway", "dist", "index.js")
	mp := filepath.Join(dir, "node_modules", "mcp-proxy", "dist", "bin", "mcp-proxy.mjs")
	if fileExists(sg) && fileExists(mp) && installedVersion(dir, "supergateway") == supergatewayVersion && installedVersion(dir, "mcp-proxy") == mcpProxyVersion {
		return sg, mp, nil
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return "", "", errors.New("npm is not installed")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	h.logf("npm: installing supergateway@%s and mcp-proxy@%s into %s", supergatewayVersion, mcpProxyVersion, dir)
	ictx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ictx, "npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error",
		"supergateway@"+supergatewayVersion, "mcp-proxy@"+mcpProxyVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("npm install: %v: %s", err, lastLines(string(out), 3))
	}
	if !fileExists(sg) || !fileExists(mp) {
		return "", "", errors.New("npm install finished but the entry points are missing")
	}
	return sg, mp, nil
}

func installedVersion(dir, pkg string) string {
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", pkg, "package.json"))
	if err != nil {
		return ""
	}
	_, rest, ok := strings.Cut(string(b), `"version": "`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// The npm gateways are started as `node ENTRY`, not through npx, so the
// process whose RSS is read is the gateway itself.

func (h *harness) startSupergateway(ctx context.Context, entry string) (*gateway, error) {
	addr, err := bench.FreePort()
	if err != nil {
		return nil, err
	}
	_, port, _ := strings.Cut(addr, ":")
	// supergateway has no listen-address option: it binds every interface;
	// the bench only ever connects to 127.0.0.1.
	p, err := h.start(h.nodeBinary(), []string{entry, "--stdio", h.bins.everything, "--outputTransport", "streamableHttp",
		"--stateful", "--port", port, "--logLevel", "none", "--healthEndpoint", "/healthz"})
	if err != nil {
		return nil, err
	}
	if _, err := p.WaitHTTP(ctx, 60*time.Second, "http://"+addr+"/healthz"); err != nil {
		h.stop(p)
		return nil, err
	}
	return &gateway{proc: p, url: "http://" + addr + "/mcp"}, nil
}

func (h *harness) startMCPProxy(ctx context.Context, entry string) (*gateway, error) {
	addr, err := bench.FreePort()
	if err != nil {
		return nil, err
	}
	_, port, _ := strings.Cut(addr, ":")
	p, err := h.start(h.nodeBinary(), []string{entry, "--host", "127.0.0.1", "--port", port, "--server", "stream", "--", h.bins.everything})
	if err != nil {
		return nil, err
	}
	if _, err := p.WaitHTTP(ctx, 60*time.Second, "http://"+addr+"/mcp"); err != nil {
		h.stop(p)
		return nil, err
	}
	return &gateway{proc: p, url: "http://" + addr + "/mcp"}, nil
}

// startMCPGo starts the mcp-go gateway with the everything-server over
// stdio. It listens only once every upstream tool is added, so its first
// answer means ready.
func (h *harness) startMCPGo(ctx context.Context) (*gateway, error) {
	addr, err := bench.FreePort()
	if err != nil {
		return nil, err
	}
	p, err := h.start(h.bins.mcpgo, []string{"-listen", addr, "--", h.bins.everything})
	if err != nil {
		return nil, err
	}
	url := "http://" + addr + "/mcp"
	if _, err := p.WaitHTTP(ctx, 60*time.Second, url); err != nil {
		h.stop(p)
		return nil, err
	}
	return &gateway{proc: p, addr: addr, url: url}, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// cpuTimes is CPU used so far by a gateway process, by it and the
// processes it started (the upstream servers), and by this process (the
// bench client).
type cpuTimes struct {
	Gateway time.Duration `json:"gateway_ns"`
	Server  time.Duration `json:"server_side_ns"`
	Client  time.Duration `json:"client_ns"`
}

func cpuNow(gw, upstream *bench.Process) cpuTimes {
	var c cpuTimes
	c.Gateway, _ = bench.CPUTime(gw.PID())
	c.Server, _ = bench.TreeCPUTime(gw.PID())
	if upstream != nil {
		up, _ := bench.TreeCPUTime(upstream.PID())
		c.Server += up
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		c.Client = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return c
}

func (c cpuTimes) sub(d cpuTimes) cpuTimes {
	return cpuTimes{Gateway: c.Gateway - d.Gateway, Server: c.Server - d.Server, Client: c.Client - d.Client}
}

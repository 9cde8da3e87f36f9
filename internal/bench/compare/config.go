package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcphost-project/mcphost/internal/bench"
)

// loadPlugins reads the plugin blocks of the quickstart config (or
// -plugins-config) at run time, so the chain measured is the one users
// start with. Relative sources are made absolute, since the generated
// configs live elsewhere.
func (h *harness) loadPlugins() {
	path := h.o.pluginsConfig
	if !filepath.IsAbs(path) {
		path = filepath.Join(h.repo, path)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		h.note("quickstart chain skipped: %v", err)
		return
	}
	f, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		h.note("quickstart chain skipped: %s: %v", path, diags)
		return
	}
	dir := filepath.Dir(path)
	var b strings.Builder
	var names []string
	for _, blk := range f.Body.(*hclsyntax.Body).Blocks {
		if blk.Type != "plugin" {
			continue
		}
		rng := blk.Range()
		text := string(src[rng.Start.Byte:rng.End.Byte])
		if a := blk.Body.Attributes["source"]; a != nil {
			v, d := a.Expr.Value(nil)
			if !d.HasErrors() && v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
				if s := v.AsString(); !strings.HasPrefix(s, "builtin:") && !filepath.IsAbs(s) {
					er := a.Expr.Range()
					text = string(src[rng.Start.Byte:er.Start.Byte]) + strconv.Quote(filepath.Join(dir, s)) + string(src[er.End.Byte:rng.End.Byte])
				}
			}
		}
		names = append(names, strings.Join(blk.Labels, " "))
		b.WriteString(text)
		b.WriteString("\n\n")
	}
	rel, _ := filepath.Rel(h.repo, path)
	if len(names) == 0 {
		h.note("quickstart chain skipped: %s has no plugin blocks", rel)
		return
	}
	h.chain = b.String()
	h.report.Chain = fmt.Sprintf("%s: %s", rel, strings.Join(names, ", "))
	h.logf("quickstart chain from %s: %s", rel, strings.Join(names, ", "))
}

// server is one upstream of a generated config.
type server struct {
	name      string
	transport string // "stdio" or "streamable-http"
	command   []string
	url       string
}

// mcphostConfig writes an mcphost config listening on addr.
func (h *harness) mcphostConfig(file, addr, cacheDir string, servers []server, plugins string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "listen {\n  http = %s\n}\n\n", strconv.Quote(addr))
	for _, s := range servers {
		fmt.Fprintf(&b, "server %s {\n  transport = %s\n", strconv.Quote(s.name), strconv.Quote(s.transport))
		if len(s.command) > 0 {
			fmt.Fprintf(&b, "  command = %s\n", strconv.Quote(s.command[0]))
			if len(s.command) > 1 {
				q := make([]string, len(s.command)-1)
				for i, a := range s.command[1:] {
					q[i] = strconv.Quote(a)
				}
				fmt.Fprintf(&b, "  args = [%s]\n", strings.Join(q, ", "))
			}
		}
		if s.url != "" {
			fmt.Fprintf(&b, "  url = %s\n", strconv.Quote(s.url))
		}
		b.WriteString("}\n\n")
	}
	b.WriteString("tools {\n  separator = \"__\"\n  prefix = \"always\"\n}\n\n")
	b.WriteString(plugins)
	fmt.Fprintf(&b, "\nruntime {\n  cache_dir = %s\n  watch = false\n}\n", strconv.Quote(cacheDir))
	path := filepath.Join(h.work, file)
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}

// gateway is a started mcphost (or gatewayprof) with its endpoint.
type gateway struct {
	proc  *bench.Process
	addr  string // host:port
	url   string
	ready time.Duration // from exec to the "serving" line
}

// startMcphost writes a config and runs `mcphost run` on it until it logs
// that it is serving, checking that every upstream connected.
func (h *harness) startMcphost(ctx context.Context, name, cacheDir string, servers []server, plugins string) (*gateway, error) {
	return h.startMcphostBin(ctx, h.bins.mcphost, name, cacheDir, servers, plugins)
}

func (h *harness) startMcphostBin(ctx context.Context, bin, name, cacheDir string, servers []server, plugins string) (*gateway, error) {
	addr, err := bench.FreePort()
	if err != nil {
		return nil, err
	}
	cfg, err := h.mcphostConfig(name+".hcl", addr, cacheDir, servers, plugins)
	if err != nil {
		return nil, err
	}
	p, err := h.start(bin, []string{"run", cfg, "--no-watch", "--log-level", "info"}, h.o.env...)
	if err != nil {
		return nil, err
	}
	g, err := h.awaitServing(ctx, p, addr, len(servers))
	if err != nil {
		h.stop(p)
		return nil, err
	}
	return g, nil
}

func (h *harness) awaitServing(ctx context.Context, p *bench.Process, addr string, servers int) (*gateway, error) {
	at, err := p.WaitLine(ctx, 3*time.Minute, func(s string) bool { return strings.Contains(s, " serving: ") || strings.HasSuffix(s, " serving") })
	if err != nil {
		return nil, err
	}
	// mcphost logs each upstream's state before "serving"; all must be up.
	if n := strings.Count(p.Tail(200), "upstream ready"); n < servers && !strings.Contains(p.Name, "gatewayprof") {
		return nil, fmt.Errorf("%d of %d upstreams connected:\n%s", n, servers, p.Tail(20))
	}
	return &gateway{proc: p, addr: addr, url: "http://" + addr + "/mcp", ready: at.Sub(p.Started)}, nil
}

// resolveTool finds the name under which a gateway exposes an upstream
// tool: the name itself, or any prefix and separator before it.
func resolveTool(ctx context.Context, cs *mcp.ClientSession, base string) (string, error) {
	var names []string
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return "", err
		}
		if t.Name == base {
			return base, nil
		}
		names = append(names, t.Name)
	}
	for _, n := range names {
		if strings.HasSuffix(n, "__"+base) || strings.HasSuffix(n, "_"+base) || strings.HasSuffix(n, "."+base) {
			return n, nil
		}
	}
	return "", fmt.Errorf("no tool %q among %d tools", base, len(names))
}

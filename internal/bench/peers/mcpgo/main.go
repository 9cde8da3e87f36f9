// Command mcpgo-gateway is the benchmark's stand-in for TBXark/mcp-proxy, the
// Go gateway built on mark3labs/mcp-go that issue 20 asks to compare with.
// The Go module proxy reachable here refuses every version of
// github.com/TBXark/mcp-proxy, so internal/bench/compare cannot build the
// real one; this program is built the same way, in a few lines, so that the
// figures say what a gateway on mcp-go costs:
//
//   - one mcp-go stdio client per upstream (client.NewStdioMCPClient, which
//     starts the process), initialized with mcp-go's latest protocol version;
//   - one mcp-go server (server.NewMCPServer with resource capabilities and
//     recovery), to which every upstream tool is added under its own name
//     with the client's CallTool as its handler, so a tools/call is decoded
//     by the server, passed to CallTool, and re-encoded on the way back; the
//     upstream's prompts, resources and resource templates are added the same
//     way, and a failure to list them is ignored;
//   - mcp-go's streamable HTTP server as the handler, mounted at /mcp.
//
// It differs from TBXark/mcp-proxy in what a benchmark does not exercise: one
// upstream from the command line instead of a JSON config of many (each
// under its own path), no auth tokens, no tool filters, no SSE server type,
// no request logging. TBXark/mcp-proxy serves streamable HTTP stateless
// (server.WithStateLess(true)); this gateway issues session ids by default,
// like the other targets of the comparison, and -stateless switches to
// TBXark's setting. It also copies the upstream's stderr to its own, so a
// chatty upstream cannot fill the pipe and stall.
//
//	mcpgo-gateway -listen 127.0.0.1:8080 -- everything-server
//
// It listens on a loopback address only, and prints "serving on ADDR" once
// every upstream tool has been added and the listener is bound.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpgo-gateway:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcpgo-gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8080", "loopback host:port to serve streamable HTTP on, at /mcp")
	stateless := fs.Bool("stateless", false, "serve streamable HTTP without session ids, as TBXark/mcp-proxy does")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: mcpgo-gateway [-listen 127.0.0.1:PORT] [-stateless] -- COMMAND [ARG...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	upstream := fs.Args()
	if len(upstream) == 0 {
		fs.Usage()
		return errors.New("no upstream command after --")
	}
	if err := checkLoopback(*listen); err != nil {
		return err
	}

	c, err := client.NewStdioMCPClient(upstream[0], nil, upstream[1:]...)
	if err != nil {
		return fmt.Errorf("starting upstream: %w", err)
	}
	defer c.Close()
	if r, ok := client.GetStderr(c); ok {
		go io.Copy(stderr, r)
	}

	s := server.NewMCPServer("mcpgo-gateway", "0.1.0",
		server.WithResourceCapabilities(true, true),
		server.WithRecovery(),
	)
	ictx, cancel := context.WithTimeout(ctx, time.Minute)
	n, err := addUpstream(ictx, c, s)
	cancel()
	if err != nil {
		return fmt.Errorf("upstream %s: %w", upstream[0], err)
	}

	var opts []server.StreamableHTTPOption
	if *stateless {
		opts = append(opts, server.WithStateLess(true))
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", server.NewStreamableHTTPServer(s, opts...))
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "mcpgo-gateway: %d tools from %s; serving on %s\n", n, upstream[0], ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// checkLoopback refuses a listen address that is not on a loopback IP: the
// benchmark's servers never listen anywhere else.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-listen %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-listen %q: not a loopback IP address", addr)
	}
	return nil
}

// addUpstream initializes the client and adds the upstream's tools, prompts,
// resources and resource templates to s, each forwarded to the client. It
// returns how many tools it added; a failure to list tools is an error, one
// to list the rest is not (the upstream may not offer them).
func addUpstream(ctx context.Context, c *client.Client, s *server.MCPServer) (int, error) {
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "mcpgo-gateway", Version: "0.1.0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return 0, fmt.Errorf("initialize: %w", err)
	}

	n := 0
	var tr mcp.ListToolsRequest
	for {
		res, err := c.ListTools(ctx, tr)
		if err != nil {
			return n, fmt.Errorf("tools/list: %w", err)
		}
		for _, t := range res.Tools {
			s.AddTool(t, c.CallTool)
			n++
		}
		if res.NextCursor == "" {
			break
		}
		tr.Params.Cursor = res.NextCursor
	}

	var pr mcp.ListPromptsRequest
	for {
		res, err := c.ListPrompts(ctx, pr)
		if err != nil {
			break
		}
		for _, p := range res.Prompts {
			s.AddPrompt(p, c.GetPrompt)
		}
		if res.NextCursor == "" {
			break
		}
		pr.Params.Cursor = res.NextCursor
	}

	read := func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		res, err := c.ReadResource(ctx, req)
		if err != nil {
			return nil, err
		}
		return res.Contents, nil
	}
	var rr mcp.ListResourcesRequest
	for {
		res, err := c.ListResources(ctx, rr)
		if err != nil {
			break
		}
		for _, r := range res.Resources {
			s.AddResource(r, read)
		}
		if res.NextCursor == "" {
			break
		}
		rr.Params.Cursor = res.NextCursor
	}
	var rt mcp.ListResourceTemplatesRequest
	for {
		res, err := c.ListResourceTemplates(ctx, rt)
		if err != nil {
			break
		}
		for _, t := range res.ResourceTemplates {
			s.AddResourceTemplate(t, read)
		}
		if res.NextCursor == "" {
			break
		}
		rt.Params.Cursor = res.NextCursor
	}
	return n, nil
}

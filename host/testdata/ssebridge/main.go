// Command ssebridge serves a stdio MCP server over the legacy HTTP+SSE
// transport: each SSE connection starts the command and pumps JSON-RPC
// messages both ways without looking at them. It lets the tests and the
// conformance runs put an SSE upstream (such as the go-sdk everything-server,
// which speaks only stdio and streamable HTTP) behind mcphost.
//
//	ssebridge -http 127.0.0.1:PORT -- COMMAND [ARGS...]
package main

import (
	"context"
	"flag"
	"log"
	"net/http"
	"os/exec"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	addr := flag.String("http", "127.0.0.1:0", "listen address")
	flag.Parse()
	argv := flag.Args()
	if len(argv) == 0 {
		log.Fatal("usage: ssebridge -http ADDR -- COMMAND [ARGS...]")
	}
	var (
		mu       sync.Mutex
		sessions = map[string]*mcp.SSEServerTransport{}
		next     int
	)
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			mu.Lock()
			t := sessions[r.URL.Query().Get("sessionid")]
			mu.Unlock()
			if t == nil {
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
			t.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		mu.Lock()
		next++
		id := string(rune('a'+next%26)) + r.RemoteAddr
		t := &mcp.SSEServerTransport{Endpoint: "/?sessionid=" + id, Response: w}
		sessions[id] = t
		mu.Unlock()
		defer func() { mu.Lock(); delete(sessions, id); mu.Unlock() }()

		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		down, err := t.Connect(ctx)
		if err != nil {
			return
		}
		defer down.Close()
		up, err := (&mcp.CommandTransport{Command: exec.Command(argv[0], argv[1:]...)}).Connect(ctx)
		if err != nil {
			log.Print(err)
			return
		}
		defer up.Close()
		pump := func(from, to mcp.Connection) {
			defer cancel()
			for {
				msg, err := from.Read(ctx)
				if err != nil {
					return
				}
				if err := to.Write(ctx, msg); err != nil {
					return
				}
			}
		}
		go pump(up, down)
		go pump(down, up)
		<-ctx.Done()
	})
	log.Fatal(http.ListenAndServe(*addr, nil))
}

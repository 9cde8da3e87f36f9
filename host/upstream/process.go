package upstream

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/upstream/process"
	"github.com/mcphost-project/mcphost/internal/secrets"
)

// stdioTransport starts an upstream server as a child process in its own
// process group, so that closing the connection ends the server and every
// process it started (npx, go run and shell wrappers all fork children).
type stdioTransport struct {
	cfg    ServerConfig
	log    hclog.Logger
	stderr *tailWriter
	pid    atomic.Int64 // the latest server process started, for status
}

func newStdioTransport(cfg ServerConfig, log hclog.Logger) *stdioTransport {
	return &stdioTransport{cfg: cfg, log: log, stderr: newTailWriter(log, 8)}
}

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	// The tag finds the server's descendants that leave its process group
	// and tree (descendants_linux.go).
	tag := process.NewTag()
	cmd := t.command(tag)
	// A cgroup of its own, where this process's cgroup is writable, holds
	// every process the server starts (cgroup_linux.go).
	cg := process.NewCgroup(tag[strings.LastIndexByte(tag, '.')+1:])
	cg.Apply(cmd)
	conn, err := t.start(ctx, cmd)
	if err != nil && cg != nil {
		// The kernel refused the cgroup (clone3 unavailable, or a
		// controller's limits): start without it, with the tag and tree.
		t.log.Debug("starting the server in a cgroup of its own failed; starting it without", "error", err)
		cg.Kill(0)
		cg = nil
		cmd = t.command(tag)
		conn, err = t.start(ctx, cmd)
	}
	cg.Started()
	if err != nil {
		cg.Kill(0)
		return nil, err
	}
	t.pid.Store(int64(cmd.Process.Pid))
	return &groupConn{Connection: conn, pgid: cmd.Process.Pid, tag: tag, cgroup: cg}, nil
}

// command is the server's command, tagged with tag.
func (t *stdioTransport) command(tag string) *exec.Cmd {
	cmd := exec.Command(t.cfg.Command, t.cfg.Args...)
	cmd.Dir = t.cfg.Cwd
	cmd.Env = os.Environ()
	for k, v := range t.cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, process.TagEnv+"="+tag)
	cmd.Stderr = t.stderr
	cmd.SysProcAttr = process.ProcAttr() // its own process group (process_*.go)
	return cmd
}

// start starts cmd as the server, recorded as a child the subreaper (if
// any) must not reap before the go-sdk waits for it.
func (t *stdioTransport) start(ctx context.Context, cmd *exec.Cmd) (mcp.Connection, error) {
	end := process.Children.Starting()
	pipes, err := startPipes(cmd, process.Grace)
	var pid int
	if err == nil {
		pid = cmd.Process.Pid
	}
	end(pid)
	if err != nil {
		return nil, err
	}
	return pipes.connect()
}

// groupConn ends the whole process group after the go-sdk has closed stdin
// and waited for (or killed) the main process, and then every descendant
// that left the group.
type groupConn struct {
	mcp.Connection
	pgid   int
	tag    string
	cgroup *process.Cgroup // nil without cgroups
	once   sync.Once
}

func (c *groupConn) Close() error {
	// The tree under the server, read while it still stands: once the
	// server exits, its children are orphans with no link to it but the tag.
	tree := process.Descendants(c.pgid, "")
	err := c.Connection.Close()
	c.once.Do(func() {
		process.KillGroup(c.pgid, process.Grace/2)
		process.KillDescendants(tree, c.tag, process.Grace/2)
		c.cgroup.Kill(process.Grace / 2) // what is left: SIGKILL
		process.Children.Exited(c.pgid)
	})
	return err
}

// tailWriter forwards an upstream's stderr to the log line by line and keeps
// the last few lines, which explain most failed starts. Servers print their
// configuration when they fail (connection strings, keys), so every line is
// masked (internal/secrets) before it is logged or kept; the tail is shown
// to operators (status, logs), never to clients.
type tailWriter struct {
	log  hclog.Logger
	mu   sync.Mutex
	buf  []byte
	tail []string
	keep int
	mask secrets.LineMasker
}

func newTailWriter(log hclog.Logger, keep int) *tailWriter {
	return &tailWriter{log: log, keep: keep}
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.line(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 64<<10 { // a huge line without newline: flush it
		w.line(string(w.buf))
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

func (w *tailWriter) line(s string) {
	s = strings.TrimRight(s, "\r")
	if s == "" {
		return
	}
	s = w.mask.Line(s)
	w.log.Debug("stderr", "line", s)
	w.tail = append(w.tail, s)
	if len(w.tail) > w.keep {
		w.tail = w.tail[len(w.tail)-w.keep:]
	}
}

// Tail returns the last lines written, joined for an error message.
func (w *tailWriter) Tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.tail, "\n")
}

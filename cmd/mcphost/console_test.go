package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// The web console in a real browser: headless Chromium from Debian's
// package, driven with chromedp, against a real mcphost running the
// quickstart's config. Without Chromium the test is skipped, except in
// CI (CI=true), where .ci/run installs it.
//
//	go test ./cmd/mcphost -run TestConsoleBrowser -screenshots ../../docs/screenshots
//
// also writes the console's pages as PNGs for docs/console.md.
var screenshots = flag.String("screenshots", "", "directory to write the console's screenshots into (TestConsoleBrowser)")

const (
	consoleAdminKey = "k-console-op-0123456789abcdef"
	consoleDevKey   = "k-console-dev-0123456789abcdef"
)

// chromium finds the browser, or skips (fails under CI) without it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"chromium", "/usr/bin/chromium"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium: .ci/run installs Debian's package (apt-get install chromium)")
	}
	t.Skip("no chromium in PATH or /usr/bin; apt-get install chromium to run the browser tests")
	return ""
}

// quickstartConsole writes the quickstart's config with prebuilt servers,
// listen.auth keys (an operator's and a developer's), the admin listener
// and a store, and a pin plugin ahead of the chain for the pins page.
func quickstartConsole(t *testing.T, mcpAddr, adminAddr string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "quickstart", "config.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bins, err := testproc.Build(dir, map[string]string{"notes": "../../examples/servers/notes"})
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	replace := func(old, new string) {
		t.Helper()
		if !strings.Contains(text, old) {
			t.Fatalf("examples/quickstart/config.hcl no longer holds %q: update this test", old)
		}
		text = strings.Replace(text, old, new, 1)
	}
	replace(`http = "127.0.0.1:7700"`, fmt.Sprintf(`http = %q
  auth {
    key "op" {
      value   = %q
      subject = "operator"
      groups  = ["admins"]
    }
    key "dev" {
      value   = %q
      subject = "dana"
      groups  = ["eng"]
    }
  }`, mcpAddr, consoleAdminKey, consoleDevKey))
	replace(`command   = "go"
  args      = ["run", "./examples/servers/clock"]`, fmt.Sprintf("command = %q", clockBin))
	replace(`command   = "go"
  args      = ["run", "./examples/servers/notes", "-dir", "examples/quickstart/notes"]`,
		fmt.Sprintf("command = %q\n  args = [\"-dir\", %q]", bins["notes"], filepath.Join(dir, "notes-data")))
	replace(`plugin "no-delete" {`, `plugin "pin" {
  source        = "builtin:pin"
  allowed_paths = { "./pins" = "/pins" }
}

plugin "no-delete" {`)
	text += fmt.Sprintf(`
admin {
  http = %q
}
store {
  sqlite = "console.db"
}
audit {
  arguments = true
}
`, adminAddr)
	if err := os.MkdirAll(filepath.Join(dir, "pins"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "config.hcl")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runMcphost runs mcphost on cfg until the test ends and waits for its
// admin API; it returns its log.
func runMcphost(t *testing.T, cfg, adminAddr string) *testproc.Buffer {
	t.Helper()
	return startMcphost(t, "http://"+adminAddr+"/openapi.json", 60*time.Second, "run", cfg, "--no-watch").logs
}

// browser is one Chromium tab, with the page's script errors collected.
type browser struct {
	t    *testing.T
	ctx  context.Context
	logs *testproc.Buffer // mcphost's, shown when a step fails
	mu   sync.Mutex
	errs []string
}

func newBrowser(t *testing.T, path string, logs *testproc.Buffer) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.WindowSize(1280, 800))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root otherwise
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{t: t, ctx: ctx, logs: logs}
	// The browser starts on the first action, under a context without a
	// deadline (chromedp ties the browser's life to it).
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	// Every page records what its Content-Security-Policy blocked: an
	// inline style, or anything from another origin, is a bug.
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: `window.__blocked = []; document.addEventListener("securitypolicyviolation",
			e => window.__blocked.push(e.violatedDirective + " " + e.blockedURI));`,
	}); err != nil {
		t.Fatal(err)
	}
	exceptions := chromedp.Events(ctx, runtime.ExceptionThrown)
	go func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.errs = append(b.errs, ev.ExceptionDetails.Text+" "+describe(ev.ExceptionDetails.Exception))
			b.mu.Unlock()
		}
	}()
	return b
}

func describe(o *runtime.RemoteObject) string {
	if o == nil {
		return ""
	}
	return o.Description
}

// do runs one step within 30 seconds; a failure shows the page's text,
// its script errors and mcphost's log.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		text, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
		b.t.Fatalf("%s: %v\npage:\n%s\nscript errors: %q\nmcphost:\n%s", what, err, text, b.scriptErrors(), b.logs)
	}
	if errs := b.scriptErrors(); len(errs) > 0 {
		b.t.Fatalf("%s: the page's script failed: %q", what, errs)
	}
	blocked, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`window.__blocked || []`))
	if err != nil || len(blocked) > 0 {
		b.t.Fatalf("%s: the Content-Security-Policy blocked %q (%v)", what, blocked, err)
	}
}

func (b *browser) scriptErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errs...)
}

// waitText waits for an element matching css whose text holds want.
func waitText(css, want string) chromedp.Action[chromedp.Void] {
	c, _ := json.Marshal(css)
	w, _ := json.Marshal(want)
	return chromedp.Poll[chromedp.Void](fmt.Sprintf(`[...document.querySelectorAll(%s)].some(e => e.textContent.includes(%s))`, c, w),
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(25*time.Second))
}

func waitGone(css string) chromedp.Action[chromedp.Void] {
	c, _ := json.Marshal(css)
	return chromedp.Poll[chromedp.Void](fmt.Sprintf(`!document.querySelector(%s)`, c),
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(25*time.Second))
}

// shot writes the page as docs/screenshots/NAME.png when asked to.
func (b *browser) shot(name string) {
	b.t.Helper()
	if *screenshots == "" {
		return
	}
	// Without the messages of the last actions, and with the fonts and
	// the state dots' pulse settled.
	if err := chromedp.Do(b.ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("flash")?.replaceChildren(); document.activeElement?.blur()`)); err != nil {
		b.t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*screenshots, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

func server(name string) string { return fmt.Sprintf(`tr[data-server=%q]`, name) }

func serverIn(name, state string) string {
	return fmt.Sprintf(`tr[data-server=%q][data-state=%q]`, name, state)
}

// TestConsoleBrowser logs in to the console and sees the quickstart's
// servers, the tools a caller sees with the policies that hid or changed
// them, and the plugins; reloads the plugins; adds a server, disconnects
// and reconnects one, tests one, edits the added one and approves the pin
// of the tool the edit changed, removes it, logs out; and finds a denied
// call among the calls with the policy that denied it.
func TestConsoleBrowser(t *testing.T) {
	path := chromium(t)
	mcpAddr, adminAddr := testproc.FreeAddr(t), testproc.FreeAddr(t)
	logs := runMcphost(t, quickstartConsole(t, mcpAddr, adminAddr), adminAddr)
	admin := "http://" + adminAddr
	b := newBrowser(t, path, logs)
	if *screenshots != "" {
		if err := os.MkdirAll(*screenshots, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	b.do("the login page", chromedp.Navigate(admin+"/"), chromedp.WaitVisible(chromedp.ID("key")))
	b.shot("login")
	b.do("a key that is not an admin's is refused",
		chromedp.SendKeys(chromedp.ID("key"), consoleDevKey), chromedp.Submit(chromedp.ID("key")),
		// A query, unlike a poll, waits across the page load.
		chromedp.WaitVisible(chromedp.CSS(".flash.bad")), waitText(".flash.bad", "not an admin"))
	b.do("logging in shows the quickstart's servers",
		chromedp.SendKeys(chromedp.ID("key"), consoleAdminKey), chromedp.Submit(chromedp.ID("key")),
		chromedp.WaitVisible(chromedp.CSS(serverIn("clock", "connected"))),
		chromedp.WaitVisible(chromedp.CSS(serverIn("notes", "connected"))))

	b.do("the tools as a caller sees them, with the policies that hid or changed them",
		chromedp.Navigate(admin+"/#tools"),
		waitText(`tr[data-tool="notes__delete_note"]`, "hidden by no-delete"),
		waitText(`tr[data-tool="clock__current_time"]`, "What time is it?"),
		waitText(`tr[data-tool="clock__current_time"]`, "changed by titles"))
	b.shot("tools")

	b.do("the plugins with their counters",
		chromedp.Navigate(admin+"/#plugins"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-plugin="no-delete"] .s-loaded`)),
		waitText(`tr[data-plugin="pin"]`, "builtin:pin"))
	b.do("reloading the plugins",
		chromedp.Click(chromedp.CSS(`button[data-action="reload"]`)),
		waitText(".flash.ok", "Reloaded"))
	b.shot("plugins")

	b.do("adding a server",
		chromedp.Navigate(admin+"/#servers"),
		chromedp.Click(chromedp.CSS(`button[data-action="add"]`)),
		chromedp.WaitVisible(chromedp.ID("f-name")),
		chromedp.SendKeys(chromedp.ID("f-name"), "extra"),
		chromedp.SendKeys(chromedp.ID("f-command"), upstreamBin),
		chromedp.SendKeys(chromedp.ID("f-args"), "-name\nextra"))
	b.shot("add-server")
	b.do("the added server connects",
		chromedp.Click(chromedp.CSS(`button[data-action="save"]`)),
		chromedp.WaitVisible(chromedp.CSS(serverIn("extra", "connected"))),
		waitText(server("extra"), "store"))

	b.do("disconnecting clock",
		chromedp.Click(chromedp.CSS(server("clock")+` button[data-action="disconnect"]`)),
		chromedp.WaitVisible(chromedp.CSS(serverIn("clock", "disconnected"))))
	b.shot("servers")
	b.do("reconnecting clock",
		chromedp.Click(chromedp.CSS(server("clock")+` button[data-action="reconnect"]`)),
		chromedp.WaitVisible(chromedp.CSS(serverIn("clock", "connected"))))
	b.do("testing clock connects to it without adding it",
		chromedp.Click(chromedp.CSS(server("clock")+` button[data-action="test"]`)),
		waitText(`dialog [data-test="ok"]`, "current_time"),
		chromedp.Click(chromedp.CSS(`dialog .buttons button`)), waitGone("dialog"))

	// A client lists the tools, which the pin plugin pins; editing extra
	// then changes its echo tool, which the plugin hides until approved.
	hc := &http.Client{Transport: bearer{consoleDevKey, http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "console-test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: "http://" + mcpAddr + "/mcp", HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	b.do("editing the added server",
		chromedp.Click(chromedp.CSS(server("extra")+` button[data-action="edit"]`)),
		chromedp.WaitVisible(chromedp.ID("f-args")),
		chromedp.SetValue(chromedp.ID("f-args"), "-name\nextra\n-echo-description\nEchoes text, louder."),
		chromedp.Click(chromedp.CSS(`button[data-action="save"]`)),
		waitGone("dialog"),
		chromedp.WaitVisible(chromedp.CSS(serverIn("extra", "connected"))))
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	b.do("the changed tool awaits approval",
		chromedp.Navigate(admin+"/#pins"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-pin="extra/echo"]`)),
		waitText(".diff .ins", "louder"))
	b.shot("pins")
	b.do("approving it",
		chromedp.Click(chromedp.CSS(`tr[data-pin="extra/echo"] button[data-action="approve"]`)),
		waitText(".flash.ok", "Approved: extra/echo"),
		waitText(`[data-pin-plugin="pin"]`, "Nothing awaits approval"))

	b.do("removing the added server",
		chromedp.Navigate(admin+"/#servers"),
		chromedp.Click(chromedp.CSS(server("extra")+` button[data-action="remove"]`)),
		chromedp.Click(chromedp.CSS(`dialog button[data-action="confirm"]`)),
		waitGone(server("extra")))

	b.do("logging out", chromedp.Submit(chromedp.CSS(`form.who`)), chromedp.WaitVisible(chromedp.ID("key")))
	b.do("logging in again",
		chromedp.SendKeys(chromedp.ID("key"), consoleAdminKey), chromedp.Submit(chromedp.ID("key")),
		chromedp.WaitVisible(chromedp.CSS(serverIn("clock", "connected"))))

	// Last, the audit log: among a few calls, a denied one shows with the
	// plugin that denied it.
	for _, c := range []struct {
		name    string
		args    map[string]any
		isError bool
	}{
		{"notes__add_note", map[string]any{"name": "todo", "content": "Ship the console."}, false},
		{"clock__current_time", map[string]any{"zone": "Europe/Paris"}, false},
		{"notes__delete_note", map[string]any{"name": "todo"}, true},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.name, Arguments: c.args})
		if err != nil || res.IsError != c.isError {
			t.Fatalf("calling %s: %v %+v", c.name, err, res)
		}
	}
	b.do("the denied call, with the policy that denied it",
		chromedp.Navigate(admin+"/#calls"),
		waitText(`tr[data-outcome="denied"]`, "notes__delete_note"),
		waitText(`tr[data-outcome="denied"]`, "no-delete denied"),
		chromedp.Click(chromedp.CSS(`tr[data-outcome="denied"] td`)),
		waitText(`tr.detail`, "Decisions, in chain order"))
	b.shot("calls")
}

// TestConsoleWithoutAudit: the calls page of an mcphost without an audit
// log says so.
func TestConsoleWithoutAudit(t *testing.T) {
	path := chromium(t)
	adminAddr := testproc.FreeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf(`
listen {
  http = %q
  auth {
    key "op" {
      value   = %q
      subject = "operator"
      groups  = ["admins"]
    }
  }
}
admin {
  http = %q
}
server "up" {
  command = "UPSTREAM"
}
`, testproc.FreeAddr(t), consoleAdminKey, adminAddr))
	logs := runMcphost(t, cfg, adminAddr)
	b := newBrowser(t, path, logs)
	b.do("logging in",
		chromedp.Navigate("http://"+adminAddr+"/"),
		chromedp.SendKeys(chromedp.ID("key"), consoleAdminKey), chromedp.Submit(chromedp.ID("key")),
		chromedp.WaitVisible(chromedp.CSS(serverIn("up", "connected"))))
	b.do("the calls page",
		chromedp.Navigate("http://"+adminAddr+"/#calls"),
		waitText(`[data-audit="off"]`, "Audit log not enabled"),
		waitText(`[data-audit="off"]`, "add an audit block"))
}

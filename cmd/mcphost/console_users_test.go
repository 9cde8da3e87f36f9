package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

func userRowCSS(subject string) string { return fmt.Sprintf(`tr[data-user=%q]`, subject) }

func userIn(subject, state string) string {
	return fmt.Sprintf(`tr[data-user=%q][data-state=%q]`, subject, state)
}

// TestConsoleUsers: on the console's users page, the config file's key is
// listed read-only; a user added there gets a key shown once, which calls
// a tool at once; disabled, its key is refused; a rotated key replaces it;
// revoked and removed, the user is gone. A secret set for alice is
// listed by name, never shown, and deleted.
func TestConsoleUsers(t *testing.T) {
	path := chromium(t)
	mcpAddr, adminAddr := testproc.FreeAddr(t), testproc.FreeAddr(t)
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
store {
  sqlite = "console.db"
  key    = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="
}
server "up" {
  command = "UPSTREAM"
  args    = ["-name", "up"]
}
`, mcpAddr, consoleAdminKey, adminAddr))
	logs := runMcphost(t, cfg, adminAddr)
	admin := "http://" + adminAddr
	r := &replica{mcp: mcpAddr}
	ctx := context.Background()
	b := newBrowser(t, path, logs)
	b.do("logging in",
		chromedp.Navigate(admin+"/"),
		chromedp.SendKeys(chromedp.ID("key"), consoleAdminKey), chromedp.Submit(chromedp.ID("key")),
		chromedp.WaitVisible(chromedp.CSS(serverIn("up", "connected"))))
	b.do("the users page lists the config file's key, read-only",
		chromedp.Navigate(admin+"/#users"),
		waitText(userRowCSS("operator"), "config"),
		waitGone(userRowCSS("operator")+` button[data-action="remove"]`))

	b.do("adding a user",
		chromedp.Click(chromedp.CSS(`button[data-action="add-user"]`)),
		chromedp.WaitVisible(chromedp.ID("u-subject")),
		chromedp.SendKeys(chromedp.ID("u-subject"), "alice"),
		chromedp.SendKeys(chromedp.ID("u-groups"), "eng, ops"),
		chromedp.SendKeys(chromedp.ID("u-attributes"), "team=core"),
		chromedp.SendKeys(chromedp.ID("u-keyName"), "laptop"),
		chromedp.Click(chromedp.CSS(`button[data-action="save-user"]`)),
		waitText(`dialog pre.new-key`, "mcph_"))
	b.shot("users-new-key")
	key := b.text(`dialog pre.new-key`)
	b.do("the new user is listed, enabled",
		chromedp.Click(chromedp.CSS(`dialog .buttons button`)), waitGone("dialog"),
		chromedp.WaitVisible(chromedp.CSS(userIn("alice", "enabled"))),
		waitText(userRowCSS("alice"), "team=core"),
		waitText(userRowCSS("alice"), "laptop"))
	b.shot("users")
	if strings.Contains(b.text(`main`), key) {
		t.Fatal("the key is shown on the page after its dialog closed")
	}
	cs, err := connectAs(ctx, r, key)
	if err != nil {
		t.Fatalf("the key the console showed: %v", err)
	}
	if err := callUp(ctx, cs); err != nil {
		t.Fatal(err)
	}
	cs.Close()

	b.do("disabling alice",
		chromedp.Click(chromedp.CSS(userRowCSS("alice")+` button[data-action="disable"]`)),
		chromedp.WaitVisible(chromedp.CSS(userIn("alice", "disabled"))))
	if cs, err := connectAs(ctx, r, key); err == nil {
		cs.Close()
		t.Fatal("a disabled user's key connects")
	}
	b.do("enabling alice",
		chromedp.Click(chromedp.CSS(userRowCSS("alice")+` button[data-action="enable"]`)),
		chromedp.WaitVisible(chromedp.CSS(userIn("alice", "enabled"))))

	const consoleSecret = "console-secret-value-3f9d"
	b.do("setting alice's secret",
		chromedp.Click(chromedp.CSS(userRowCSS("alice")+` button[data-action="secrets"]`)),
		chromedp.WaitVisible(chromedp.ID("s-name")),
		chromedp.SendKeys(chromedp.ID("s-name"), "GITHUB_TOKEN"),
		chromedp.SendKeys(chromedp.ID("s-value"), consoleSecret),
		chromedp.Click(chromedp.CSS(`button[data-action="set-secret"]`)),
		chromedp.WaitVisible(chromedp.CSS(`dialog tr[data-secret="GITHUB_TOKEN"]`)),
		waitText(".flash.ok", "secret GITHUB_TOKEN set"))
	b.shot("users-secrets")
	if v := b.value("#s-value"); v != "" || strings.Contains(b.text("body"), consoleSecret) {
		t.Fatalf("the secret's value stays on the page (field %q)", v)
	}
	b.do("deleting alice's secret",
		chromedp.Click(chromedp.CSS(`dialog tr[data-secret="GITHUB_TOKEN"] button[data-action="delete-secret"]`)),
		waitGone(`dialog tr[data-secret="GITHUB_TOKEN"]`),
		waitText("dialog", "No secrets."),
		chromedp.Click(chromedp.CSS(`dialog .buttons button`)), waitGone("dialog"))

	b.do("rotating alice's key",
		chromedp.Click(chromedp.CSS(userRowCSS("alice")+` button[data-action="rotate"]`)),
		waitText(`dialog pre.new-key`, "mcph_"))
	rotated := b.text(`dialog pre.new-key`)
	b.do("closing the key's dialog", chromedp.Click(chromedp.CSS(`dialog .buttons button`)), waitGone("dialog"))
	if cs, err := connectAs(ctx, r, key); err == nil {
		cs.Close()
		t.Fatal("the rotated-out key connects")
	}
	if cs, err := connectAs(ctx, r, rotated); err != nil {
		t.Fatalf("the rotated key: %v", err)
	} else {
		cs.Close()
	}

	b.do("revoking the key",
		chromedp.Click(chromedp.CSS(userRowCSS("alice")+` button[data-action="revoke"]`)),
		chromedp.Click(chromedp.CSS(`dialog button[data-action="confirm"]`)),
		waitText(".flash.ok", "revoked"),
		waitGone(userRowCSS("alice")+` .key`))
	if cs, err := connectAs(ctx, r, rotated); err == nil {
		cs.Close()
		t.Fatal("a revoked key connects")
	}
	b.do("removing alice",
		chromedp.Click(chromedp.CSS(userRowCSS("alice")+` button[data-action="remove"]`)),
		chromedp.Click(chromedp.CSS(`dialog button[data-action="confirm"]`)),
		waitGone(userRowCSS("alice")))
}

// value is the value of the first input matching css.
func (b *browser) value(css string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q).value`, css)))
	if err != nil {
		b.t.Fatalf("reading %s: %v", css, err)
	}
	return s
}

// text is the text of the first element matching css.
func (b *browser) text(css string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q).textContent`, css)))
	if err != nil {
		b.t.Fatalf("reading %s: %v", css, err)
	}
	return s
}

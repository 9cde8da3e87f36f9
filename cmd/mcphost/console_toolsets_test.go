package main

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// TestConsoleToolsets drives the console's toolsets page in Chromium
// against a real mcphost: the catalog's size per server in tokens, a
// toolset added through the form (served and measured at once), a
// mistake shown at its field, and the toolset removed.
func TestConsoleToolsets(t *testing.T) {
	path := chromium(t)
	mcpAddr, adminAddr := testproc.FreeAddr(t), testproc.FreeAddr(t)
	logs := runMcphost(t, quickstartConsole(t, mcpAddr, adminAddr), adminAddr)
	admin := "http://" + adminAddr
	b := newBrowser(t, path, logs)
	b.do("logging in",
		chromedp.Navigate(admin+"/"), chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SendKeys(chromedp.ID("key"), consoleAdminKey), chromedp.Submit(chromedp.ID("key")),
		chromedp.WaitVisible(chromedp.CSS(serverIn("clock", "connected"))),
		chromedp.WaitVisible(chromedp.CSS(serverIn("notes", "connected"))))
	b.do("the toolsets page: none yet, and each server's catalog in tokens",
		chromedp.Navigate(admin+"/#toolsets"),
		waitText(".empty", "No toolsets"),
		waitText(`tr[data-server="clock"]`, "tokens, 4 tools"),
		waitText(`tr[data-server="total"]`, "tokens"))
	b.do("a mistake is shown at its field",
		chromedp.Click(chromedp.CSS(`button[data-action="add-toolset"]`)),
		chromedp.WaitVisible(chromedp.ID("ts-name")),
		chromedp.SendKeys(chromedp.ID("ts-name"), "clockonly"),
		chromedp.SendKeys(chromedp.ID("ts-servers"), "clock"),
		chromedp.SendKeys(chromedp.ID("ts-always"), "current_time"),
		chromedp.Click(chromedp.CSS(`button[data-action="save-toolset"]`)),
		waitText(`.field-error[data-field="always"]`, "set exposure"))
	b.do("adding a toolset serves and measures it",
		chromedp.Evaluate[chromedp.Void](`document.getElementById("ts-always").value = ""`),
		chromedp.SendKeys(chromedp.ID("ts-tools"), "current_*, convert_time"),
		chromedp.Click(chromedp.CSS(`button[data-action="save-toolset"]`)),
		waitText(`tr[data-toolset="clockonly"]`, "/mcp/clockonly"),
		waitText(`tr[data-toolset="clockonly"] td.num`, "2"))
	b.shot("toolsets")
	cs := connectAt(t, "http://"+mcpAddr+"/mcp/clockonly", consoleAdminKey, false)
	if got := listedNames(t, cs); len(got) != 2 {
		t.Errorf("/mcp/clockonly lists %q, want the clock's current_time and convert_time", got)
	}
	b.do("removing it",
		chromedp.Click(chromedp.CSS(`tr[data-toolset="clockonly"] button[data-action="remove"]`)),
		chromedp.Click(chromedp.CSS(`button[data-action="confirm"]`)),
		waitGone(`tr[data-toolset="clockonly"]`))
}

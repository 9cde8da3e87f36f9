package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// importAndList runs `mcphost import` on source, checks that the config it
// prints holds none of secrets, then lists that config's tools with env
// set, as a user who followed the report would.
func importAndList(t *testing.T, source string, secrets []string, env ...string) (config, report, tools string) {
	t.Helper()
	out, errs, code := mcphost(t, "import", source)
	if code != 0 {
		t.Fatalf("import: exit %d\n%s", code, errs)
	}
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Fatalf("the imported config holds the secret %q:\n%s", s, out)
		}
	}
	path := filepath.Join(t.TempDir(), "config.hcl")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(mcphostBin, "tools", path)
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tools of the imported config: %v\n%s\nconfig:\n%s", err, b, out)
	}
	return out, errs, string(b)
}

// TestImportClaudeDesktop: a Claude Desktop config with a token in clear
// becomes a config whose servers serve, the token read from the
// environment the report names.
func TestImportClaudeDesktop(t *testing.T) {
	const token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"
	src, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"clock":   map[string]any{"command": clockBin},
		"my tool": map[string]any{"command": upstreamBin, "args": []string{"-name", "up"}, "env": map[string]string{"HOSTILE_SECRET": token}},
	}})
	file := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	if err := os.WriteFile(file, src, 0o600); err != nil {
		t.Fatal(err)
	}
	config, report, tools := importAndList(t, file, []string{token}, "HOSTILE_SECRET="+token)
	if !strings.Contains(config, `"HOSTILE_SECRET" = env("HOSTILE_SECRET")`) || !strings.Contains(report, "HOSTILE_SECRET") {
		t.Errorf("the token is not a reference the report names:\n%s\n%s", config, report)
	}
	for _, want := range []string{"clock__current_time", "my_tool__echo"} {
		if !strings.Contains(tools, want) {
			t.Errorf("the imported config does not serve %s:\n%s", want, tools)
		}
	}
}

// TestImportRegistryServerJSON: a registry server.json whose remote has a
// URL variable and a secret header becomes a config that reaches the
// server.
func TestImportRegistryServerJSON(t *testing.T) {
	srv := exec.Command(upstreamBin, "-http", "127.0.0.1:0", "-name", "remote")
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "server.json")
	if err := os.WriteFile(file, []byte(`{
  "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
  "name": "io.github.example/remote",
  "description": "A test server",
  "version": "1.0.0",
  "remotes": [{
    "type": "streamable-http",
    "url": "http://{host}/mcp",
    "variables": {"host": {"description": "Where it listens", "isRequired": true}},
    "headers": [{"name": "Authorization", "value": "Bearer {token}", "variables": {"token": {"isSecret": true, "isRequired": true}}}]
  }]
}`), 0o600); err != nil {
		t.Fatal(err)
	}
	config, report, tools := importAndList(t, file, nil, "REMOTE_HOST="+strings.TrimSpace(addr), "REMOTE_TOKEN=t0ken")
	if !strings.Contains(config, `env("REMOTE_TOKEN")`) || !strings.Contains(report, "REMOTE_TOKEN") || !strings.Contains(report, "REMOTE_HOST") {
		t.Errorf("the variables are not references the report names:\n%s\n%s", config, report)
	}
	if !strings.Contains(tools, "remote__echo") {
		t.Errorf("the imported config does not reach the server:\n%s", tools)
	}
}

// TestImportThroughAdmin: with --admin the servers are added to a running
// mcphost, the values the source held in clear sent to be sealed in its
// store; a server that cannot be added is exit status 1, the others added.
func TestImportThroughAdmin(t *testing.T) {
	for _, k := range []string{"MCPHOST_ADMIN", "MCPHOST_ADMIN_KEY", "MCPHOST_TOKEN"} {
		t.Setenv(k, "")
	}
	adminAddr := testproc.FreeAddr(t)
	cfg := writeConfig(t, strings.ReplaceAll(strings.ReplaceAll(adminConfig, "ADMIN", adminAddr),
		`sqlite = "servers.db"`, `sqlite = "servers.db"
  key    = "`+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))+`"`))
	startAdmin(t, cfg, adminAddr)
	src, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"clock":  map[string]any{"command": clockBin},
		"up":     map[string]any{"command": upstreamBin, "args": []string{"-name", "up"}, "env": map[string]string{"HOSTILE_SECRET": "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"}},
		"broken": map[string]any{"command": clockBin, "env": map[string]string{"DIR": "${IMPORT_TEST_UNSET}"}},
	}})
	file := filepath.Join(t.TempDir(), ".mcp.json")
	if err := os.WriteFile(file, src, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := cli(t, "import", file, "--admin", "http://"+adminAddr, "--key", serversAdminKey)
	if code != 1 || !strings.Contains(errs, "server broken: set IMPORT_TEST_UNSET") || !strings.Contains(errs, "1 of 3 servers not added") {
		t.Fatalf("import --admin with one server unresolved: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "added clock") || !strings.Contains(out, "added up") {
		t.Fatalf("import --admin did not add the others:\n%s%s", out, errs)
	}
	list, errs, code := cli(t, "servers", "list", "--admin", "http://"+adminAddr, "--key", serversAdminKey)
	if code != 0 || !strings.Contains(list, "up") || !strings.Contains(list, "clock") || strings.Contains(list, "ghp_") {
		t.Errorf("servers list after the import: exit %d\n%s%s", code, list, errs)
	}
}

// TestFailureIsFailure: mcphost tools prints the catalog of the servers
// that connected and exits 1 for one that did not (0 with --allow-failed);
// servers add of a definition that cannot connect stores it and exits 1
// (0 with --allow-failed).
func TestFailureIsFailure(t *testing.T) {
	cfg := writeConfig(t, `
server "broken" {
  command = "UPSTREAM"
  args    = ["-fail", "broken on purpose"]
}
server "clock" {
  command = "CLOCK"
}
`)
	out, errs, code := mcphost(t, "tools", cfg)
	if code != 1 || !strings.Contains(out, "clock__current_time") || !strings.Contains(errs, "1 server did not connect") {
		t.Errorf("tools with a broken server: exit %d\n%s%s", code, out, errs)
	}
	if out, errs, code := mcphost(t, "tools", cfg, "--allow-failed"); code != 0 || !strings.Contains(out, "clock__current_time") {
		t.Errorf("tools --allow-failed: exit %d\n%s%s", code, out, errs)
	}

	for _, k := range []string{"MCPHOST_ADMIN", "MCPHOST_ADMIN_KEY", "MCPHOST_TOKEN"} {
		t.Setenv(k, "")
	}
	adminAddr := testproc.FreeAddr(t)
	startAdmin(t, writeConfig(t, strings.ReplaceAll(adminConfig, "ADMIN", adminAddr)), adminAddr)
	add := func(name string, extra ...string) (string, string, int) {
		args := append([]string{"servers", "add", name, "--admin", "http://" + adminAddr, "--key", serversAdminKey, "--connect-timeout", "5s"}, extra...)
		return cli(t, append(args, "--", upstreamBin, "-fail", "broken on purpose")...)
	}
	out, errs, code = add("down")
	if code != 1 || !strings.Contains(out, "added down: failed") || !strings.Contains(errs, "down is stored but could not connect") {
		t.Errorf("servers add of a server that cannot connect: exit %d\n%s%s", code, out, errs)
	}
	if out, errs, code := add("later", "--allow-failed"); code != 0 || !strings.Contains(out, "added later: failed") {
		t.Errorf("servers add --allow-failed: exit %d\n%s%s", code, out, errs)
	}
}

// TestInspectWithConfig: a built-in that needs its configuration to
// describe itself is inspected with --config as a plugin block gives it;
// without it, the error says to pass it.
func TestInspectWithConfig(t *testing.T) {
	_, errs, code := mcphost(t, "plugin", "inspect", "builtin:deny")
	if code != 1 || !strings.Contains(errs, "--config KEY=VALUE") {
		t.Errorf("inspect builtin:deny without its config: exit %d\n%s", code, errs)
	}
	out, errs, code := mcphost(t, "plugin", "inspect", "builtin:deny", "--config", `tools=["*delete*"]`)
	if code != 0 || !strings.Contains(out, "name:        deny") || !strings.Contains(out, "hooks:") {
		t.Errorf("inspect builtin:deny --config: exit %d\n%s%s", code, out, errs)
	}
}

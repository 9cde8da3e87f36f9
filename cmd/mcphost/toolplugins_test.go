package main

import (
	"testing"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/plugins"
)

// TestToolPluginsAreServers: the commands that name servers (tools, call)
// know a tools_plugin by its label, as the host serves it.
func TestToolPluginsAreServers(t *testing.T) {
	t.Parallel()
	file := &config.File{
		Host:        gateway.Config{Servers: []upstream.ServerConfig{{Name: "clock", Command: "x"}}},
		ToolPlugins: []plugins.Spec{{Name: "data", Kind: plugins.KindTools}, {Name: "web", Kind: plugins.KindTools}},
	}
	if _, err := serversNamed(file, []string{"data", "clock"}); err != nil {
		t.Fatal(err)
	}
	if _, err := serversNamed(file, []string{"dat"}); err == nil {
		t.Fatal("an unknown name passed")
	}
	if got := serversFor(file, "data__json_to_csv"); len(got) != 1 || got[0] != "data" {
		t.Fatalf("serversFor: %v", got)
	}
	onlyServers(file, []string{"data"})
	if len(file.Host.Servers) != 0 || len(file.ToolPlugins) != 1 || file.ToolPlugins[0].Name != "data" {
		t.Fatalf("onlyServers kept %+v and %+v", file.Host.Servers, file.ToolPlugins)
	}
}

//go:build wasip1

package main

import "github.com/mcphost-project/mcphost/abi/pdk/tool"

func init() { tool.Register(Plugin) }

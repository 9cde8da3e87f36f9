//go:build wasip1

package main

import "github.com/mcphost-project/mcphost/abi/pdk/tool"

func init() {
	get = func(u string) (int, []byte, error) {
		return tool.HTTPGet(u, map[string]string{"Accept": "application/json, text/*;q=0.9"})
	}
	tool.Register(Plugin)
}

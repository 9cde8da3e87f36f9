package main

import "github.com/mcphost-project/mcphost/abi/pdk"

func init() { pdk.Register(New()) }

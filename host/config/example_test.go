package config_test

import (
	"fmt"
	"os"

	"github.com/mcphost-project/mcphost/host/config"
)

// The CLI prints every diagnostic, in file order, and stops when any is an
// error.
func ExampleParse() {
	src := []byte(`
server "files" {
  transport = "stido"
  comand    = "npx"
}
`)
	file, diags := config.Parse(src, "mcphost.hcl")
	_ = diags.WriteText(os.Stdout, 0, false)
	fmt.Println("loaded:", file != nil)
	// Output:
	// mcphost.hcl:3:15: error
	// Error: Invalid transport
	//
	//   on mcphost.hcl line 3, in server "files":
	//    3:   transport = "stido"
	//
	// transport must be "stdio", "sse", "streamable-http" or "http", not "stido". Did you mean "stdio"?
	//
	// mcphost.hcl:4:3: error
	// Error: Unsupported argument
	//
	//   on mcphost.hcl line 4, in server "files":
	//    4:   comand    = "npx"
	//
	// An argument named "comand" is not expected here. Did you mean "command"?
	//
	// loaded: false
}

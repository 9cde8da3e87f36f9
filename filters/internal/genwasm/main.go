// Command genwasm rebuilds filters/builtin.wasm and records the go version
// that built it in filters/builtin.wasm.go-version. Run it through
// `go generate ./filters` from the repository root.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/mcphost-project/mcphost/filters/internal/wasmbuild"
)

func main() {
	ctx := context.Background()
	// go generate runs in the directory of the file with the directive.
	if err := wasmbuild.Build(ctx, ".", "builtin.wasm"); err != nil {
		fmt.Fprintln(os.Stderr, "genwasm:", err)
		os.Exit(1)
	}
	v, err := wasmbuild.GoVersion(ctx, ".")
	if err == nil {
		err = os.WriteFile("builtin.wasm.go-version", []byte(v+"\n"), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "genwasm:", err)
		os.Exit(1)
	}
}

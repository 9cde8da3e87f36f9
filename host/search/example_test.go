package search_test

import (
	"fmt"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/search"
)

// A catalog indexed once, searched through one caller's view of it.
func ExampleScope_Search() {
	catalog := []abi.Tool{
		{Name: "fs__create_directory", Server: "fs", Tool: "create_directory", Description: "Create a new directory."},
		{Name: "fs__delete_file", Server: "fs", Tool: "delete_file", Description: "Removes a file."},
		{Name: "clock__current_time", Server: "clock", Tool: "current_time", Description: "The time in a zone."},
	}
	var indexer search.Indexer
	ix := indexer.For(1, catalog) // once per catalog version
	view := catalog[:2]           // what the caller's policies show them
	for _, h := range search.NewScope(ix, view).Search("make a folder", 5) {
		fmt.Println(h.Tool.Name)
	}
	// Output:
	// fs__create_directory
}

//go:build wasip1

// Command fdhog is a hostile guest that holds host descriptors: its
// tool_call hook runs the operation named by the call's "op" argument and
// answers with one line.
//
//	hog      open "path" until an open fails, keeping every file, and
//	         answer "held N ERR" (ERR is EMFILE or the error's text); with
//	         "readdir" set, read each (a directory) as it is opened
//	release  close every file held: "released N"
//	open     open "path", read it and close it: "ok" or "err ERR"
//	trap     hog, then exit with status 3
//	spin     hog, then spin until the host stops the call
package main

import (
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"syscall"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
)

func main() {}

// held persists across calls, as a leaking plugin's files would.
var held []*os.File

type args struct {
	Op      string `json:"op"`
	Path    string `json:"path"`
	Readdir bool   `json:"readdir"`
}

func init() {
	pdk.Register(pdk.Policy{
		Name:    "fdhog",
		Version: "1",
		ToolCall: func(in *abi.ToolCallInput) (*abi.CallDecision, error) {
			var a args
			if err := json.Unmarshal(in.Arguments, &a); err != nil {
				return nil, err
			}
			return pdk.Respond(pdk.TextResult(run(a), false)), nil
		},
	})
}

func run(a args) string {
	switch a.Op {
	case "hog":
		return hog(a)
	case "release":
		n := len(held)
		for _, f := range held {
			f.Close()
		}
		held = nil
		return "released " + strconv.Itoa(n)
	case "open":
		f, err := os.Open(a.Path)
		if err != nil {
			return "err " + code(err)
		}
		defer f.Close()
		if a.Readdir {
			_, err = f.ReadDir(-1)
		} else {
			_, err = f.Read(make([]byte, 1))
		}
		if err != nil {
			return "err " + code(err)
		}
		return "ok"
	case "trap":
		hog(a)
		os.Exit(3)
	case "spin":
		hog(a)
		for {
		}
	}
	return "unknown op " + a.Op
}

func hog(a args) string {
	for {
		f, err := os.Open(a.Path)
		if err == nil && a.Readdir {
			if _, err = f.ReadDir(-1); err != nil {
				f.Close()
			}
		}
		if err != nil {
			return "held " + strconv.Itoa(len(held)) + " " + code(err)
		}
		held = append(held, f)
	}
}

func code(err error) string {
	if errors.Is(err, syscall.EMFILE) {
		return "EMFILE"
	}
	return err.Error()
}

//go:build wasip1

// Command allhooks is a test plugin that exercises every part of package pdk
// through a real host: every hook, configuration, logging, plugin errors and
// panics. It is built by host_test.go.
package main

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
)

func main() {}

var (
	hide   []string
	suffix string
	calls  int64
)

func init() {
	pdk.Register(pdk.Policy{
		Name:    "allhooks",
		Version: "0.1.0",
		Configure: func(cfg pdk.ConfigSource) error {
			var err error
			if hide, err = cfg.Strings("hide"); err != nil {
				return err
			}
			suffix = cfg.String("suffix", "checked")
			if cfg.String("broken", "") != "" {
				return errors.New("broken is set")
			}
			return nil
		},
		ToolsList: func(in *abi.ToolsListInput) (*abi.ToolsListOutput, error) {
			out := &abi.ToolsListOutput{}
			for _, t := range in.Tools {
				if slices.Contains(hide, t.Name) {
					continue
				}
				t.Title = strings.TrimSpace(t.Title + " [" + suffix + "]")
				out.Tools = append(out.Tools, t)
			}
			return out, nil
		},
		ToolCall: func(in *abi.ToolCallInput) (*abi.CallDecision, error) {
			calls++
			switch in.Tool {
			case "deny":
				return pdk.Denyf("%s is denied for %s", in.Name, in.Caller.Identity), nil
			case "fail":
				return nil, errors.New("allhooks: refusing to judge " + in.Name)
			case "panic":
				panic("allhooks: boom")
			case "rewrite":
				var args map[string]any
				if err := json.Unmarshal(in.Arguments, &args); err != nil {
					return nil, err
				}
				args["rewritten"] = true
				return pdk.Rewrite(args)
			case "respond":
				return pdk.Respond(pdk.TextResult("answered by allhooks", false)), nil
			case "log":
				pdk.Logf(pdk.LevelInfo, "call %d to %s", calls, in.Name)
			case "count":
				return pdk.Denyf("call %d", calls), nil
			}
			return nil, nil
		},
		ToolResult: func(in *abi.ToolResultInput) (*abi.ToolResultOutput, error) {
			r := in.Result
			r.Content = append(r.Content, abi.Content{Type: "text", Text: suffix + " by allhooks"})
			return &abi.ToolResultOutput{Result: r}, nil
		},
	})
}

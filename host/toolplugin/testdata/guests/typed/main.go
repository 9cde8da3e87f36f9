//go:build wasip1

// Command typed is a test tool plugin built with abi/pdk/tool: typed tools
// for schemas, grants, progress, logs and swaps. -X main.buildVersion=v2
// builds a second version with another tool set.
package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/mcphost-project/mcphost/abi/pdk/tool"
)

func main() {}

var buildVersion = "v1"

type EchoIn struct {
	Text  string `json:"text" jsonschema:"what to echo"`
	Times int    `json:"times,omitempty" jsonschema:"how many times, 1 to 3"`
}

type EchoOut struct {
	Echo    string `json:"echo"`
	Version string `json:"version"`
}

type Empty struct{}

type CountOut struct {
	Count int `json:"count"`
}

type FetchIn struct {
	URL string `json:"url"`
}

type FetchOut struct {
	Status int    `json:"status"`
	Body   string `json:"body"`
}

type SleepIn struct {
	MS int `json:"ms"`
}

func init() {
	tools := []tool.Tool{
		tool.New("echo", "Echoes text.", func(c *tool.Context, in EchoIn) (EchoOut, error) {
			if in.Times < 0 || in.Times > 3 {
				return EchoOut{}, tool.Errorf("times", "must be between 1 and 3, not %d", in.Times)
			}
			out := in.Text
			for i := 1; i < in.Times; i++ {
				out += " " + in.Text
			}
			return EchoOut{Echo: out, Version: buildVersion}, nil
		}, tool.ReadOnly()),
		tool.New("whoami", "Says who calls.", func(c *tool.Context, _ Empty) (EchoOut, error) {
			return EchoOut{Echo: c.Caller.Subject + "|" + c.Caller.ClientName, Version: buildVersion}, nil
		}, tool.ReadOnly()),
		tool.New("count", "Counts calls in the plugin's key-value store.", func(c *tool.Context, _ Empty) (CountOut, error) {
			n := 0
			if v, ok := tool.KVGet("count"); ok {
				n, _ = strconv.Atoi(string(v))
			}
			n++
			tool.KVSet("count", []byte(strconv.Itoa(n)))
			return CountOut{Count: n}, nil
		}),
		tool.New("fetch", "Fetches a URL through the host.", func(c *tool.Context, in FetchIn) (FetchOut, error) {
			status, body, err := tool.HTTPGet(in.URL, nil)
			if err != nil {
				return FetchOut{}, err
			}
			return FetchOut{Status: status, Body: string(body)}, nil
		}, tool.OpenWorld(), tool.ReadOnly()),
		tool.New("steps", "Reports progress and logs.", func(c *tool.Context, _ Empty) (CountOut, error) {
			for i := 1; i <= 3; i++ {
				if err := c.Progress(float64(i), 3, fmt.Sprintf("step %d", i)); err != nil {
					return CountOut{}, err
				}
			}
			if err := c.Log("info", map[string]any{"done": 3}); err != nil {
				return CountOut{}, err
			}
			return CountOut{Count: 3}, nil
		}),
		tool.New("sleep", "Sleeps.", func(c *tool.Context, in SleepIn) (CountOut, error) {
			time.Sleep(time.Duration(in.MS) * time.Millisecond)
			return CountOut{Count: in.MS}, nil
		}, tool.ReadOnly()),
		tool.New("noop", "Does nothing.", func(c *tool.Context, _ Empty) (Empty, error) {
			return Empty{}, nil
		}, tool.ReadOnly()),
		tool.New("wipe", "Destroys everything (it says).", func(c *tool.Context, _ Empty) (CountOut, error) {
			return CountOut{}, nil
		}, tool.Destructive()),
	}
	if buildVersion == "v2" {
		tools = append(tools, tool.New("added", "Only in v2.", func(c *tool.Context, _ Empty) (CountOut, error) {
			return CountOut{Count: 2}, nil
		}, tool.ReadOnly()))
	}
	tool.Register(tool.Plugin{Name: "typed", Version: buildVersion, Tools: tools})
}

package engine_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/abi"
)

// TestReloadQuotas: a config reload that changes servers but not a quota
// keeps its counters and the call in flight under it, which ends with its
// result; a reload that changes the quota starts it afresh.
func TestReloadQuotas(t *testing.T) {
	r := newReloadRig(t)
	quotas := func(calls int) string {
		return `
quota "echoes" {
  tools  = ["echo"]
  calls  = ` + strconv.Itoa(calls) + `
  window = "1h"
}
quota "slots" {
  tools      = ["sleep"]
  concurrent = 1
}
`
	}
	r.start(r.server("a") + quotas(1))
	caller := abi.Caller{Subject: "sam", AuthMethod: abi.AuthKey}
	call := func(name, args string) (string, bool) {
		t.Helper()
		res, err := r.e.Host().CallTool(context.Background(), caller, name, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return resultText(res), res.IsError
	}
	if out, isErr := call("a__echo", `{"text":"hi"}`); isErr {
		t.Fatal(out)
	}
	slept := make(chan string, 1)
	go func() {
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
			res, err := r.e.Host().CallTool(context.Background(), caller, "a__sleep", json.RawMessage(`{"millis":2000}`))
			if err != nil {
				slept <- err.Error()
				return
			}
			if out := resultText(res); !strings.Contains(out, `refused: quota "slots"`) { // not a probe's slot
				slept <- out
				return
			}
		}
		slept <- "never let through"
	}()
	for deadline := time.Now().Add(20 * time.Second); ; {
		if out, isErr := call("a__sleep", `{"millis":1}`); isErr && strings.Contains(out, `quota "slots"`) {
			break // the long sleep is in flight
		}
		if time.Now().After(deadline) {
			t.Fatal("the long sleep never held the slot")
		}
	}

	r.reload(r.server("a") + r.server("b") + quotas(1))
	if out, isErr := call("a__echo", `{"text":"hi"}`); !isErr || !strings.Contains(out, `quota "echoes" allows 1 calls per 1h`) {
		t.Errorf("after a reload that kept the quota: %q", out)
	}
	if out, isErr := call("a__sleep", `{"millis":1}`); !isErr || !strings.Contains(out, `quota "slots"`) {
		t.Errorf("after a reload, with the long sleep in flight: %q", out)
	}
	if got := <-slept; got != "slept" {
		t.Errorf("the sleep in flight across the reload: %q", got)
	}
	if out, isErr := call("a__sleep", `{"millis":1}`); isErr {
		t.Errorf("after the long sleep ended: %s", out)
	}

	r.reload(r.server("a") + r.server("b") + quotas(2))
	if out, isErr := call("a__echo", `{"text":"hi"}`); isErr {
		t.Errorf("after the quota changed: %s", out)
	}
}

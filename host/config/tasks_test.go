package config

import (
	"strings"
	"testing"
	"time"
)

func TestTasksBlock(t *testing.T) {
	f, diags := Parse([]byte(`
tasks {
  max_per_caller = 2
  max_total      = 10
  max_ttl        = "10m"
  default_ttl    = "1m"
  poll_interval  = "2s"
  after          = "3s"
}
`), "tasks.hcl")
	if len(diags.List) > 0 {
		t.Fatal(diags.Err())
	}
	l := f.Host.Tasks
	if l.PerOwner != 2 || l.Total != 10 || l.MaxTTL != 10*time.Minute || l.DefaultTTL != time.Minute || l.PollInterval != 2*time.Second || l.After != 3*time.Second {
		t.Errorf("%+v", l)
	}
	_, diags = Parse([]byte(`
tasks {
  max_ttl     = "1m"
  default_ttl = "5m"
}
`), "tasks.hcl")
	if err := diags.Err(); err == nil || !strings.Contains(err.Error(), "default_ttl longer than max_ttl") {
		t.Errorf("default_ttl past max_ttl: %v", diags.Err())
	}
}

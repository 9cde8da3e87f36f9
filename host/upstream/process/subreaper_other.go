//go:build !linux

package process

import (
	"errors"
	"os/exec"
	"time"
)

// Subreaper exists on Linux only.
type Subreaper struct{}

// BecomeSubreaper is not supported here.
func BecomeSubreaper() (*Subreaper, error) {
	return nil, errors.New("host: a child subreaper needs Linux")
}

// Close does nothing.
func (s *Subreaper) Close() error { return nil }

var Children childSet

type childSet struct{}

func (childSet) Starting() func(int) { return func(int) {} }
func (childSet) Exited(int)          {}

const TagEnv = "MCPHOST_UPSTREAM"

func NewTag() string                                    { return "" }
func Descendants(int, string) []struct{}                { return nil }
func KillDescendants([]struct{}, string, time.Duration) {}

// Cgroup exists on Linux only: nil everywhere else.
type Cgroup struct{}

func NewCgroup(string) *Cgroup     { return nil }
func (*Cgroup) Apply(*exec.Cmd)    {}
func (*Cgroup) Started()           {}
func (*Cgroup) Kill(time.Duration) {}

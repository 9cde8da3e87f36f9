//go:build !linux

package upstream

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

var children childSet

type childSet struct{}

func (childSet) starting() func(int) { return func(int) {} }
func (childSet) exited(int)          {}

const upstreamTagEnv = "MCPHOST_UPSTREAM"

func newUpstreamTag() string                            { return "" }
func descendants(int, string) []struct{}                { return nil }
func killDescendants([]struct{}, string, time.Duration) {}

// upstreamCgroup exists on Linux only: nil everywhere else.
type upstreamCgroup struct{}

func newUpstreamCgroup(string) *upstreamCgroup { return nil }
func (*upstreamCgroup) apply(*exec.Cmd)        {}
func (*upstreamCgroup) started()               {}
func (*upstreamCgroup) kill(time.Duration)     {}

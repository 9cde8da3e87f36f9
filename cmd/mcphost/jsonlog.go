package main

import (
	"time"

	"github.com/hashicorp/go-hclog"
)

// durationLogger writes durations as text ("1.5s") in JSON logs, where
// hclog would write a time.Duration as its nanoseconds, which read as a
// bare, unitless number.
type durationLogger struct{ hclog.Logger }

func durations(args []any) []any {
	copied := false
	for i := 1; i < len(args); i += 2 {
		if d, ok := args[i].(time.Duration); ok {
			if !copied { // never the caller's slice
				args, copied = append([]any(nil), args...), true
			}
			args[i] = d.String()
		}
	}
	return args
}

func (l durationLogger) Log(level hclog.Level, msg string, args ...any) {
	l.Logger.Log(level, msg, durations(args)...)
}
func (l durationLogger) Trace(msg string, args ...any) { l.Logger.Trace(msg, durations(args)...) }
func (l durationLogger) Debug(msg string, args ...any) { l.Logger.Debug(msg, durations(args)...) }
func (l durationLogger) Info(msg string, args ...any)  { l.Logger.Info(msg, durations(args)...) }
func (l durationLogger) Warn(msg string, args ...any)  { l.Logger.Warn(msg, durations(args)...) }
func (l durationLogger) Error(msg string, args ...any) { l.Logger.Error(msg, durations(args)...) }
func (l durationLogger) With(args ...any) hclog.Logger {
	return durationLogger{l.Logger.With(durations(args)...)}
}
func (l durationLogger) Named(name string) hclog.Logger {
	return durationLogger{l.Logger.Named(name)}
}
func (l durationLogger) ResetNamed(name string) hclog.Logger {
	return durationLogger{l.Logger.ResetNamed(name)}
}

var _ hclog.Logger = durationLogger{}

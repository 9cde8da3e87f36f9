package main

import (
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pinned is the "now" of the in-process tests: a Saturday, in winter time in
// Europe and summer time in Australia.
var pinned = time.Date(2024, time.March, 2, 15, 4, 5, 0, time.UTC)

// connect runs the clock server in-process and returns a client session.
func connect(t *testing.T) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	server := newServer(func() time.Time { return pinned }, nil)
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool that must succeed and decodes its structured output.
func call[Out any](t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) Out {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): %v", name, args, err)
	}
	if res.IsError {
		t.Fatalf("%s(%v): tool error: %s", name, args, text(res))
	}
	var out Out
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: structured content %s: %v", name, b, err)
	}
	// The text content carries the same JSON, for clients that ignore
	// structured content.
	var again Out
	if err := json.Unmarshal([]byte(text(res)), &again); err != nil {
		t.Errorf("%s: text content is not the output as JSON: %v", name, err)
	}
	return out
}

// callErr calls a tool that must fail with a tool error mentioning want.
func callErr(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, want string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): want a tool error, got protocol error %v", name, args, err)
	}
	if !res.IsError {
		t.Fatalf("%s(%v): want a tool error, got %s", name, args, text(res))
	}
	if !strings.Contains(text(res), want) {
		t.Errorf("%s(%v): error %q does not mention %q", name, args, text(res), want)
	}
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestToolsListed(t *testing.T) {
	t.Parallel()
	cs := connect(t)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"current_time": true, "convert_time": true, "add_duration": true, "days_between": true}
	if len(res.Tools) != len(want) {
		t.Errorf("got %d tools, want %d", len(res.Tools), len(want))
	}
	for _, tool := range res.Tools {
		if !want[tool.Name] {
			t.Errorf("unexpected tool %q", tool.Name)
			continue
		}
		if tool.Title == "" || tool.Description == "" {
			t.Errorf("%s: missing title or description", tool.Name)
		}
		if a := tool.Annotations; a == nil || !a.ReadOnlyHint || a.Title == "" {
			t.Errorf("%s: want readOnlyHint and a title in annotations, got %+v", tool.Name, a)
		}
		if tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("%s: want input and output schemas", tool.Name)
		}
	}
}

func TestCurrentTime(t *testing.T) {
	t.Parallel()
	cs := connect(t)
	tests := []struct {
		zone string
		want TimeInfo
	}{
		{"", TimeInfo{Time: "2024-03-02T15:04:05Z", Zone: "UTC", Abbreviation: "UTC", UTCOffset: "+00:00", Date: "2024-03-02", Weekday: "Saturday", Unix: pinned.Unix()}},
		{"Europe/Paris", TimeInfo{Time: "2024-03-02T16:04:05+01:00", Zone: "Europe/Paris", Abbreviation: "CET", UTCOffset: "+01:00", Date: "2024-03-02", Weekday: "Saturday", Unix: pinned.Unix()}},
		{"Australia/Sydney", TimeInfo{Time: "2024-03-03T02:04:05+11:00", Zone: "Australia/Sydney", Abbreviation: "AEDT", UTCOffset: "+11:00", DST: true, Date: "2024-03-03", Weekday: "Sunday", Unix: pinned.Unix()}},
		{"Asia/Kolkata", TimeInfo{Time: "2024-03-02T20:34:05+05:30", Zone: "Asia/Kolkata", Abbreviation: "IST", UTCOffset: "+05:30", Date: "2024-03-02", Weekday: "Saturday", Unix: pinned.Unix()}},
	}
	for _, tt := range tests {
		args := map[string]any{}
		if tt.zone != "" {
			args["zone"] = tt.zone
		}
		if got := call[TimeInfo](t, cs, "current_time", args); got != tt.want {
			t.Errorf("current_time(%q) = %+v, want %+v", tt.zone, got, tt.want)
		}
	}
	callErr(t, cs, "current_time", map[string]any{"zone": "Mars/Olympus"}, "unknown time zone")
	callErr(t, cs, "current_time", map[string]any{"zone": "Local"}, "not allowed")
}

func TestConvertTime(t *testing.T) {
	t.Parallel()
	cs := connect(t)
	tests := []struct {
		args             map[string]any
		wantFrom, wantTo string
		wantToZone       string
	}{
		{map[string]any{"time": "2024-07-01T09:00:00Z", "to_zone": "America/New_York"},
			"2024-07-01T09:00:00Z", "2024-07-01T05:00:00-04:00", "America/New_York"},
		{map[string]any{"time": "2024-07-01 09:00", "from_zone": "Europe/Paris", "to_zone": "Asia/Tokyo"},
			"2024-07-01T09:00:00+02:00", "2024-07-01T16:00:00+09:00", "Asia/Tokyo"},
		// An explicit offset wins over from_zone.
		{map[string]any{"time": "2024-01-15T23:30:00-08:00", "from_zone": "Asia/Tokyo", "to_zone": "UTC"},
			"2024-01-15T23:30:00-08:00", "2024-01-16T07:30:00Z", "UTC"},
	}
	for _, tt := range tests {
		got := call[ConvertTimeOut](t, cs, "convert_time", tt.args)
		if got.From.Time != tt.wantFrom || got.To.Time != tt.wantTo || got.To.Zone != tt.wantToZone {
			t.Errorf("convert_time(%v) = %s -> %s (%s), want %s -> %s (%s)",
				tt.args, got.From.Time, got.To.Time, got.To.Zone, tt.wantFrom, tt.wantTo, tt.wantToZone)
		}
		if got.From.Unix != got.To.Unix {
			t.Errorf("convert_time(%v): instants differ: %d != %d", tt.args, got.From.Unix, got.To.Unix)
		}
	}
	callErr(t, cs, "convert_time", map[string]any{"time": "yesterday", "to_zone": "UTC"}, "cannot read time")
	callErr(t, cs, "convert_time", map[string]any{"time": "2024-07-01T09:00:00Z", "to_zone": "Nowhere/Land"}, "unknown time zone")
	// to_zone is required by the input schema: that is a protocol-level
	// rejection or a tool error, never a success.
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "convert_time", Arguments: map[string]any{"time": "2024-07-01T09:00:00Z"}})
	if err == nil && !res.IsError {
		t.Errorf("convert_time without to_zone succeeded: %s", text(res))
	}
}

func TestAddDuration(t *testing.T) {
	t.Parallel()
	cs := connect(t)
	tests := []struct {
		args  map[string]any
		start string
		want  string
	}{
		{map[string]any{"duration": "90m"}, "2024-03-02T15:04:05Z", "2024-03-02T16:34:05Z"},
		{map[string]any{"time": "2024-01-31T10:00:00Z", "duration": "1w2d3h4m5s"}, "2024-01-31T10:00:00Z", "2024-02-09T13:04:05Z"},
		{map[string]any{"time": "2024-03-01T00:00:00Z", "duration": "-1d"}, "2024-03-01T00:00:00Z", "2024-02-29T00:00:00Z"},
		{map[string]any{"time": "2024-03-01T00:00:00Z", "duration": "- 2w"}, "2024-03-01T00:00:00Z", "2024-02-16T00:00:00Z"},
		// A calendar day across the spring-forward change keeps the hour...
		{map[string]any{"time": "2024-03-30 12:00", "zone": "Europe/Paris", "duration": "1d"}, "2024-03-30T12:00:00+01:00", "2024-03-31T12:00:00+02:00"},
		// ...while 24 hours of clock time do not.
		{map[string]any{"time": "2024-03-30 12:00", "zone": "Europe/Paris", "duration": "24h"}, "2024-03-30T12:00:00+01:00", "2024-03-31T13:00:00+02:00"},
		// With a zone, an RFC 3339 start is shown in that zone.
		{map[string]any{"time": "2024-06-01T00:00:00Z", "zone": "America/Los_Angeles", "duration": "1h"}, "2024-05-31T17:00:00-07:00", "2024-05-31T18:00:00-07:00"},
		// Without one, the caller's own offset is kept.
		{map[string]any{"time": "2024-06-01T10:00:00+05:30", "duration": "30m"}, "2024-06-01T10:00:00+05:30", "2024-06-01T10:30:00+05:30"},
	}
	for _, tt := range tests {
		got := call[AddDurationOut](t, cs, "add_duration", tt.args)
		if got.Start.Time != tt.start || got.Result.Time != tt.want {
			t.Errorf("add_duration(%v) = %s -> %s, want %s -> %s", tt.args, got.Start.Time, got.Result.Time, tt.start, tt.want)
		}
	}
	for _, bad := range []string{"", "soon", "1x", "2d-3h", "w"} {
		callErr(t, cs, "add_duration", map[string]any{"duration": bad}, "duration")
	}
}

func TestDaysBetween(t *testing.T) {
	t.Parallel()
	cs := connect(t)
	tests := []struct {
		start, end string
		want       DaysBetweenOut
	}{
		{"2024-01-01", "2024-01-01", DaysBetweenOut{}},
		{"2024-01-01", "2024-12-25", DaysBetweenOut{Days: 359, Weeks: 51, RemainderDays: 2, Weekdays: 257}},
		{"2024-02-28", "2024-03-01", DaysBetweenOut{Days: 2, Weeks: 0, RemainderDays: 2, Weekdays: 2}},
		// Friday to Monday: Friday counts, the weekend does not.
		{"2024-03-01", "2024-03-04", DaysBetweenOut{Days: 3, Weeks: 0, RemainderDays: 3, Weekdays: 1}},
		{"2024-03-04", "2024-03-01", DaysBetweenOut{Days: -3, Weeks: 0, RemainderDays: -3, Weekdays: -1}},
		{"2023-03-01", "2024-03-01", DaysBetweenOut{Days: 366, Weeks: 52, RemainderDays: 2, Weekdays: 262}},
	}
	for _, tt := range tests {
		got := call[DaysBetweenOut](t, cs, "days_between", map[string]any{"start": tt.start, "end": tt.end})
		if got != tt.want {
			t.Errorf("days_between(%s, %s) = %+v, want %+v", tt.start, tt.end, got, tt.want)
		}
	}
	callErr(t, cs, "days_between", map[string]any{"start": "2024-13-01", "end": "2024-01-01"}, "start")
	callErr(t, cs, "days_between", map[string]any{"start": "2024-01-01", "end": "01/02/2024"}, "end")
}

// TestCountDaysWeekdays checks the weekday count against a day-by-day walk.
func TestCountDaysWeekdays(t *testing.T) {
	t.Parallel()
	base := time.Date(2024, time.January, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 40; i++ {
		for n := 0; n < 30; n++ {
			start, end := base.AddDate(0, 0, i), base.AddDate(0, 0, i+n)
			want := 0
			for d := start; d.Before(end); d = d.AddDate(0, 0, 1) {
				if d.Weekday() != time.Saturday && d.Weekday() != time.Sunday {
					want++
				}
			}
			if got := countDays(start, end); got.Weekdays != want || got.Days != n {
				t.Fatalf("countDays(%s, %s) = %+v, want %d days and %d weekdays", start.Format(dateLayout), end.Format(dateLayout), got, n, want)
			}
		}
	}
}

// TestRunStdio drives run over pipes, as a parent process would, and checks
// that end of input is a clean exit.
func TestRunStdio(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, nil, inR, outW, io.Discard)
		outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).
		Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := call[TimeInfo](t, cs, "current_time", map[string]any{"zone": "UTC"})
	if now := time.Now().Unix(); got.Unix < now-60 || got.Unix > now+60 {
		t.Errorf("current_time is %d, want about %d", got.Unix, now)
	}
	cs.Close() // closes the server's stdin
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run returned %v on end of input, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after end of input")
	}
}

func TestRunFlags(t *testing.T) {
	t.Parallel()
	var stderr strings.Builder
	if err := run(context.Background(), []string{"-h"}, strings.NewReader(""), io.Discard, &stderr); err != nil {
		t.Errorf("-h: %v", err)
	}
	if !strings.Contains(stderr.String(), "usage: clock") {
		t.Errorf("-h printed %q", stderr.String())
	}
	if err := run(context.Background(), []string{"extra"}, strings.NewReader(""), io.Discard, io.Discard); err == nil {
		t.Error("want an error for a stray argument")
	}
}

// TestSubprocess builds the real binary and talks to it over stdio, the way
// mcphost runs an upstream.
func TestSubprocess(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "clock")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.Command(bin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if info := cs.InitializeResult().ServerInfo; info.Name != "clock" {
		t.Errorf("server name %q, want clock", info.Name)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 4 {
		t.Fatalf("tools/list: %d tools, %v", len(tools.Tools), err)
	}
	if got := call[TimeInfo](t, cs, "current_time", map[string]any{"zone": "Asia/Tokyo"}); got.UTCOffset != "+09:00" {
		t.Errorf("current_time(Asia/Tokyo) offset %s", got.UTCOffset)
	}
	if got := call[ConvertTimeOut](t, cs, "convert_time", map[string]any{"time": "2024-07-01T12:00:00Z", "to_zone": "Europe/London"}); got.To.Time != "2024-07-01T13:00:00+01:00" {
		t.Errorf("convert_time: %s", got.To.Time)
	}
	if got := call[AddDurationOut](t, cs, "add_duration", map[string]any{"time": "2024-12-31T23:00:00Z", "duration": "2h"}); got.Result.Date != "2025-01-01" {
		t.Errorf("add_duration: %s", got.Result.Time)
	}
	if got := call[DaysBetweenOut](t, cs, "days_between", map[string]any{"start": "2024-01-01", "end": "2025-01-01"}); got.Days != 366 {
		t.Errorf("days_between: %d", got.Days)
	}
	// Closing the session closes the child's stdin; it must exit by itself
	// and cleanly, well before CommandTransport's 5s SIGTERM grace period.
	start := time.Now()
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v (stderr: %s)", err, stderr.String())
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("server took %v to exit after end of input", d)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d, stderr: %s", code, stderr.String())
	}
	if s := stderr.String(); s != "" {
		t.Errorf("unexpected stderr output: %s", s)
	}
}

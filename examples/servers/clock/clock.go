package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // zones work on machines without /usr/share/zoneinfo

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// version is reported in the server's implementation info.
const version = "0.1.0"

// dateLayout is the form of every calendar date the tools read and write.
const dateLayout = "2006-01-02"

// TimeInfo describes one instant as seen in one time zone.
type TimeInfo struct {
	Time         string `json:"time" jsonschema:"the instant in RFC 3339 form with the zone's offset"`
	Zone         string `json:"zone" jsonschema:"the IANA time zone name, or the offset such as +02:00 for a time given with a fixed offset"`
	Abbreviation string `json:"abbreviation" jsonschema:"the zone's abbreviation at that instant, such as CET or PDT"`
	UTCOffset    string `json:"utc_offset" jsonschema:"the offset from UTC as +HH:MM"`
	DST          bool   `json:"dst" jsonschema:"whether daylight saving time is in effect"`
	Date         string `json:"date" jsonschema:"the calendar date as YYYY-MM-DD"`
	Weekday      string `json:"weekday" jsonschema:"the day of the week in English"`
	Unix         int64  `json:"unix" jsonschema:"seconds since 1970-01-01T00:00:00Z"`
}

// CurrentTimeIn is the input of current_time.
type CurrentTimeIn struct {
	Zone string `json:"zone,omitempty" jsonschema:"IANA time zone name such as Europe/Paris or America/New_York; default UTC"`
}

// ConvertTimeIn is the input of convert_time.
type ConvertTimeIn struct {
	Time     string `json:"time" jsonschema:"an RFC 3339 timestamp, or a wall-clock time YYYY-MM-DD HH:MM[:SS] read in from_zone"`
	FromZone string `json:"from_zone,omitempty" jsonschema:"IANA zone of a wall-clock time; default UTC; ignored when time carries an offset"`
	ToZone   string `json:"to_zone" jsonschema:"IANA time zone to convert to"`
}

// ConvertTimeOut is the output of convert_time.
type ConvertTimeOut struct {
	From TimeInfo `json:"from" jsonschema:"the instant in the source zone"`
	To   TimeInfo `json:"to" jsonschema:"the same instant in the target zone"`
}

// AddDurationIn is the input of add_duration.
type AddDurationIn struct {
	Time     string `json:"time,omitempty" jsonschema:"an RFC 3339 timestamp or a wall-clock time YYYY-MM-DD HH:MM[:SS] read in zone; default now"`
	Duration string `json:"duration" jsonschema:"what to add: calendar weeks and days then a Go duration, such as 90m or 1d12h or -2w or 1w2d3h4m5s; a leading minus subtracts"`
	Zone     string `json:"zone,omitempty" jsonschema:"IANA zone for wall-clock input and for the result; default UTC"`
}

// AddDurationOut is the output of add_duration.
type AddDurationOut struct {
	Start  TimeInfo `json:"start" jsonschema:"the instant the duration was added to"`
	Result TimeInfo `json:"result" jsonschema:"the start plus the duration"`
}

// DaysBetweenIn is the input of days_between.
type DaysBetweenIn struct {
	Start string `json:"start" jsonschema:"the first date as YYYY-MM-DD"`
	End   string `json:"end" jsonschema:"the second date as YYYY-MM-DD"`
}

// DaysBetweenOut is the output of days_between.
type DaysBetweenOut struct {
	Days          int `json:"days" jsonschema:"calendar days from start to end; negative when end comes first"`
	Weeks         int `json:"weeks" jsonschema:"whole weeks in days, with the sign of days"`
	RemainderDays int `json:"remainder_days" jsonschema:"days left over after the whole weeks, with the sign of days"`
	Weekdays      int `json:"weekdays" jsonschema:"Monday-to-Friday days in the half-open range from the earlier date up to the later, with the sign of days"`
}

// newServer returns the clock server. now is the source of the current time,
// so tests can pin it.
func newServer(now func() time.Time, logger *slog.Logger) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "clock", Title: "Clock", Version: version}, &mcp.ServerOptions{
		Instructions: "Time zone arithmetic. Zones are IANA names (Europe/Paris); times are RFC 3339.",
		Logger:       logger,
	})
	c := &clock{now: now}
	readOnly := func(title string) *mcp.ToolAnnotations {
		return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}
	}
	mcp.AddTool(s, &mcp.Tool{
		Name:        "current_time",
		Title:       "Current time",
		Description: "The current date and time in a time zone (UTC when none is given).",
		Annotations: readOnly("Current time"),
	}, c.currentTime)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "convert_time",
		Title:       "Convert time between zones",
		Description: "Shows one instant in another time zone. Accepts an RFC 3339 timestamp or a wall-clock time in from_zone.",
		Annotations: readOnly("Convert time between zones"),
	}, c.convertTime)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "add_duration",
		Title:       "Add a duration to a time",
		Description: "Adds (or with a leading minus, subtracts) calendar weeks and days and a clock duration to a time. Days follow the calendar, so 1d across a DST change keeps the wall-clock hour.",
		Annotations: readOnly("Add a duration to a time"),
	}, c.addDuration)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "days_between",
		Title:       "Days between dates",
		Description: "Counts calendar days, whole weeks and weekdays between two dates.",
		Annotations: readOnly("Days between dates"),
	}, c.daysBetween)
	return s
}

type clock struct {
	now func() time.Time
}

func (c *clock) currentTime(_ context.Context, _ *mcp.CallToolRequest, in CurrentTimeIn) (*mcp.CallToolResult, TimeInfo, error) {
	loc, err := loadZone(in.Zone)
	if err != nil {
		return nil, TimeInfo{}, err
	}
	info := describe(c.now().In(loc))
	return nil, info, nil
}

func (c *clock) convertTime(_ context.Context, _ *mcp.CallToolRequest, in ConvertTimeIn) (*mcp.CallToolResult, ConvertTimeOut, error) {
	from, err := loadZone(in.FromZone)
	if err != nil {
		return nil, ConvertTimeOut{}, err
	}
	if in.ToZone == "" {
		return nil, ConvertTimeOut{}, errors.New("to_zone is required")
	}
	to, err := loadZone(in.ToZone)
	if err != nil {
		return nil, ConvertTimeOut{}, err
	}
	t, err := parseTime(in.Time, from)
	if err != nil {
		return nil, ConvertTimeOut{}, err
	}
	out := ConvertTimeOut{From: describe(t), To: describe(t.In(to))}
	return nil, out, nil
}

func (c *clock) addDuration(_ context.Context, _ *mcp.CallToolRequest, in AddDurationIn) (*mcp.CallToolResult, AddDurationOut, error) {
	loc, err := loadZone(in.Zone)
	if err != nil {
		return nil, AddDurationOut{}, err
	}
	start := c.now().In(loc)
	if in.Time != "" {
		if start, err = parseTime(in.Time, loc); err != nil {
			return nil, AddDurationOut{}, err
		}
		if in.Zone != "" {
			start = start.In(loc)
		}
	}
	d, err := parseDuration(in.Duration)
	if err != nil {
		return nil, AddDurationOut{}, err
	}
	end := d.addTo(start)
	out := AddDurationOut{Start: describe(start), Result: describe(end)}
	return nil, out, nil
}

func (c *clock) daysBetween(_ context.Context, _ *mcp.CallToolRequest, in DaysBetweenIn) (*mcp.CallToolResult, DaysBetweenOut, error) {
	start, err := time.Parse(dateLayout, strings.TrimSpace(in.Start))
	if err != nil {
		return nil, DaysBetweenOut{}, fmt.Errorf("start: want a date as YYYY-MM-DD, got %q", in.Start)
	}
	end, err := time.Parse(dateLayout, strings.TrimSpace(in.End))
	if err != nil {
		return nil, DaysBetweenOut{}, fmt.Errorf("end: want a date as YYYY-MM-DD, got %q", in.End)
	}
	out := countDays(start, end)
	return nil, out, nil
}

// countDays counts from start to end, both dates at midnight UTC.
func countDays(start, end time.Time) DaysBetweenOut {
	sign := 1
	lo, hi := start, end
	if end.Before(start) {
		sign, lo, hi = -1, end, start
	}
	days := int(hi.Sub(lo).Hours() / 24) // UTC midnights: every day is 24h
	weekdays := days / 7 * 5
	for d := lo.AddDate(0, 0, days/7*7); d.Before(hi); d = d.AddDate(0, 0, 1) {
		if wd := d.Weekday(); wd != time.Saturday && wd != time.Sunday {
			weekdays++
		}
	}
	return DaysBetweenOut{
		Days:          sign * days,
		Weeks:         sign * (days / 7),
		RemainderDays: sign * (days % 7),
		Weekdays:      sign * weekdays,
	}
}

// loadZone loads an IANA zone; the empty name is UTC. "Local" is refused
// because it means the server's zone, which the caller cannot see.
func loadZone(name string) (*time.Location, error) {
	name = strings.TrimSpace(name)
	if name == "" || strings.EqualFold(name, "UTC") || name == "Z" {
		return time.UTC, nil
	}
	if name == "Local" {
		return nil, errors.New(`zone "Local" is not allowed: name an IANA zone such as Europe/Paris`)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q: use an IANA name such as Europe/Paris", name)
	}
	return loc, nil
}

// wallLayouts are the wall-clock forms accepted besides RFC 3339.
var wallLayouts = []string{
	"2006-01-02 15:04:05",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
	dateLayout,
}

// parseTime reads an RFC 3339 timestamp (whose own offset wins) or a
// wall-clock time in loc.
func parseTime(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, errors.New("time is required")
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		// Keep the offset the caller wrote, never the server's Local zone.
		_, off := t.Zone()
		if off == 0 {
			return t.UTC(), nil
		}
		return t.In(time.FixedZone(t.Format("-07:00"), off)), nil
	}
	for _, layout := range wallLayouts {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("cannot read time %q: want RFC 3339 (2024-03-10T14:30:00Z) or YYYY-MM-DD HH:MM[:SS]", s)
}

// calendarDuration is weeks and days added on the calendar, then a clock
// duration.
type calendarDuration struct {
	days  int
	clock time.Duration
}

func (d calendarDuration) addTo(t time.Time) time.Time {
	return t.AddDate(0, 0, d.days).Add(d.clock)
}

var calendarPrefix = regexp.MustCompile(`^(?:(\d+)w)?(?:(\d+)d)?(.*)$`)

// parseDuration reads [-][Nw][Nd][Go duration], such as 1w2d3h or -90m.
func parseDuration(s string) (calendarDuration, error) {
	orig := s
	s = strings.ReplaceAll(strings.TrimSpace(s), " ", "")
	sign := 1
	switch {
	case strings.HasPrefix(s, "-"):
		sign, s = -1, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	m := calendarPrefix.FindStringSubmatch(s)
	if s == "" || m == nil || (m[1] == "" && m[2] == "" && m[3] == "") {
		return calendarDuration{}, fmt.Errorf("cannot read duration %q: want something like 90m, 1d12h or -2w", orig)
	}
	var d calendarDuration
	if m[1] != "" {
		w, err := strconv.Atoi(m[1])
		if err != nil || w > 100_000 {
			return calendarDuration{}, fmt.Errorf("duration %q: too many weeks", orig)
		}
		d.days += 7 * w
	}
	if m[2] != "" {
		n, err := strconv.Atoi(m[2])
		if err != nil || n > 1_000_000 {
			return calendarDuration{}, fmt.Errorf("duration %q: too many days", orig)
		}
		d.days += n
	}
	if m[3] != "" {
		if strings.HasPrefix(m[3], "-") || strings.HasPrefix(m[3], "+") {
			return calendarDuration{}, fmt.Errorf("cannot read duration %q: put the sign first", orig)
		}
		c, err := time.ParseDuration(m[3])
		if err != nil {
			return calendarDuration{}, fmt.Errorf("cannot read duration %q: %v", orig, err)
		}
		d.clock = c
	}
	d.days *= sign
	d.clock *= time.Duration(sign)
	return d, nil
}

func describe(t time.Time) TimeInfo {
	abbr, _ := t.Zone()
	return TimeInfo{
		Time:         t.Format(time.RFC3339),
		Zone:         t.Location().String(),
		Abbreviation: abbr,
		UTCOffset:    t.Format("-07:00"),
		DST:          t.IsDST(),
		Date:         t.Format(dateLayout),
		Weekday:      t.Weekday().String(),
		Unix:         t.Unix(),
	}
}

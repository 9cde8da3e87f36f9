package main

// The client of the admin API (docs/admin-api.md) that `mcphost servers`
// uses: requests and their credential, and how an answer other than 2xx, or
// none, is told to the user.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/mcphost-project/mcphost/host/admin"
	"github.com/mcphost-project/mcphost/host/config"
)

// adminClient calls the admin API and prints its answers.
type adminClient struct {
	base, key      string
	asJSON         bool
	hc             *http.Client
	stdout, stderr io.Writer
	command        string // the command its messages name; "servers" when empty
	// allowFailed: a server stored but failing to connect is not an error
	// (--allow-failed).
	allowFailed bool
}

// prefix starts the client's messages: "mcphost servers".
// decodeAnswer decodes an answer of the admin API into v. An answer that
// is not what it should be (what) is said on stderr, and exits 1.
func (c *adminClient) decodeAnswer(data []byte, v any, what string) error {
	if err := json.Unmarshal(data, v); err != nil {
		fmt.Fprintf(c.stderr, "%s: the admin API answered what is not %s: %v\n", c.prefix(), what, err)
		return exitError(1)
	}
	return nil
}

func (c *adminClient) prefix() string {
	if c.command == "" {
		return "mcphost servers"
	}
	return "mcphost " + c.command
}

// Bounds of a call: reads and quick changes, and those that wait for a
// server to connect (up to its connect_timeout, 60 s at most for a test).
const (
	adminQuick = 30 * time.Second
	adminSlow  = 5 * time.Minute
)

// call sends one request and returns the answer's body when its status is
// 2xx. Any other answer, or none, is printed and is exit status 1.
func (c *adminClient) call(ctx context.Context, timeout time.Duration, method, path string, body any, header http.Header) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		fmt.Fprintf(c.stderr, "%s: admin URL %q: %v\n", c.prefix(), c.base, err)
		return nil, exitError(2)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			fmt.Fprintf(c.stderr, "%s: no admin API at %s (is mcphost running with an admin block?)\n", c.prefix(), c.base)
		case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
			fmt.Fprintf(c.stderr, "%s: %s %s: no answer within %s\n", c.prefix(), method, req.URL.Redacted(), timeout)
		default:
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			fmt.Fprintf(c.stderr, "%s: %s %s: %v\n", c.prefix(), method, req.URL.Redacted(), err)
		}
		return nil, exitError(1)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		fmt.Fprintf(c.stderr, "%s: %s %s: reading the answer: %v\n", c.prefix(), method, req.URL.Redacted(), err)
		return nil, exitError(1)
	}
	if resp.StatusCode/100 == 2 {
		return data, nil
	}
	return nil, c.refused(req, resp, data)
}

// serverPath is the API's path of the server name.
func serverPath(name string) string { return "/v1/servers/" + url.PathEscape(name) }

// ifMatchHeader adds the If-Match of --if-version to h; version 0 adds
// nothing.
func ifMatchHeader(version int64, h http.Header) http.Header {
	if h == nil {
		h = http.Header{}
	}
	if version > 0 {
		h.Set("If-Match", fmt.Sprintf(`"v%d"`, version))
	}
	return h
}

// refused prints an answer other than 2xx: a problem document, or what
// came back in its place.
func (c *adminClient) refused(req *http.Request, resp *http.Response, data []byte) error {
	var p admin.Problem
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if (mt == "application/problem+json" || mt == "application/json") && json.Unmarshal(data, &p) == nil && (p.Title != "" || p.Detail != "") {
		if p.Status == 0 {
			p.Status = resp.StatusCode
		}
		printProblemAs(c.stderr, c.prefix(), p)
		if c.asJSON {
			c.stdout.Write(data)
		}
	} else {
		fmt.Fprintf(c.stderr, "%s: %s %s: %s", c.prefix(), req.Method, req.URL.Redacted(), resp.Status)
		if s := strings.TrimSpace(string(data)); s != "" {
			fmt.Fprintf(c.stderr, ": %s", oneLine(s))
		}
		fmt.Fprintln(c.stderr)
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		if c.key == "" {
			fmt.Fprintln(c.stderr, "The admin API needs a key: pass --key KEY or set MCPHOST_ADMIN_KEY (a key of listen.auth in an admin group).")
		} else {
			fmt.Fprintln(c.stderr, "The key was refused: pass another with --key KEY or MCPHOST_ADMIN_KEY (a key of listen.auth in an admin group).")
		}
	case http.StatusForbidden:
		if strings.HasPrefix(p.Detail, "invalid API key") {
			fmt.Fprintln(c.stderr, "The key was refused: pass another with --key KEY or MCPHOST_ADMIN_KEY (a key of listen.auth in an admin group).")
		} else {
			fmt.Fprintln(c.stderr, "This key is not an admin's: pass one in listen.auth.admin_groups with --key KEY or MCPHOST_ADMIN_KEY.")
		}
	case http.StatusPreconditionFailed:
		fmt.Fprintln(c.stderr, "Nothing changed. Run mcphost servers list --json for the current version.")
	}
	return exitError(1)
}

// printJSON writes the API's JSON as it came.
func (c *adminClient) printJSON(data []byte) error {
	_, err := c.stdout.Write(data)
	if err == nil && !bytes.HasSuffix(data, []byte("\n")) {
		_, err = io.WriteString(c.stdout, "\n")
	}
	return err
}

// printProblem prints "mcphost servers: TITLE: DETAIL" and each field at
// fault. A detail that only repeats the fields (as the API's 400 and 422
// do) is left out.
func printProblem(w io.Writer, p admin.Problem) { printProblemAs(w, "mcphost servers", p) }

// printProblemAs is printProblem for the command prefix names.
func printProblemAs(w io.Writer, prefix string, p admin.Problem) {
	line := prefix + ": " + p.Title
	if p.Title == "" {
		line = prefix + ": " + http.StatusText(p.Status)
	}
	var fields []string
	for _, fe := range p.Errors {
		if fe.Field != "" {
			fields = append(fields, fe.Field+": "+fe.Detail)
		} else {
			fields = append(fields, fe.Detail)
		}
	}
	if p.Detail != "" && p.Detail != strings.Join(fields, "; ") {
		line += ": " + p.Detail
	}
	fmt.Fprintln(w, line)
	for _, f := range fields {
		fmt.Fprintln(w, "  "+f)
	}
}

// reportSpecError prints a definition's mistakes as a problem document of
// the API would be printed, and is exit status 1.
func reportSpecError(stderr io.Writer, title string, err error) error {
	var se *config.SpecError
	if errors.As(err, &se) {
		printProblem(stderr, admin.Problem{Title: title, Detail: se.Error(), Errors: se.Errors})
	} else {
		printProblem(stderr, admin.Problem{Title: title, Detail: err.Error()})
	}
	return exitError(1)
}

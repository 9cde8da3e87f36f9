package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/mcphost-project/mcphost/host/engine"
	"github.com/mcphost-project/mcphost/host/usersecrets"
)

// userSecret runs `mcphost users secret set|list|delete`: a caller's
// secrets, /v1/users/{subject}/secrets. A value is read from stdin, or
// asked for without echo when stdin is a terminal, never taken from the
// command line, where other users of the machine and the shell's history
// would see it.
func (c *adminClient) userSecret(ctx context.Context, sub string, pos []string, stdin io.Reader) error {
	path := userPath(pos[0]) + "/secrets"
	switch sub {
	case "secret list":
		data, err := c.call(ctx, adminQuick, "GET", path, nil, nil)
		if err != nil || c.asJSON {
			return c.printed(data, err)
		}
		var doc struct {
			Secrets []engine.SecretInfo `json:"secrets"`
		}
		if err := c.decodeAnswer(data, &doc, "a list of secrets"); err != nil {
			return err
		}
		if len(doc.Secrets) == 0 {
			fmt.Fprintf(c.stdout, "%s has no secrets\n", pos[0])
			return nil
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tUPDATED")
		for _, s := range doc.Secrets {
			fmt.Fprintf(tw, "%s\t%s\n", s.Name, s.Updated.Local().Format(time.DateTime))
		}
		return tw.Flush()
	case "secret delete":
		data, err := c.call(ctx, adminQuick, "DELETE", path+"/"+url.PathEscape(pos[1]), nil, nil)
		if err != nil || c.asJSON {
			return c.printed(data, err)
		}
		fmt.Fprintf(c.stdout, "removed secret %s of %s\n", pos[1], pos[0])
		return nil
	}
	value, err := readSecretValue(stdin, c.stderr, pos[1])
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost users secret set: %v\n", err)
		return exitError(1)
	}
	data, err := c.call(ctx, adminQuick, "PUT", path+"/"+url.PathEscape(pos[1]), map[string]string{"value": value}, nil)
	if err != nil || c.asJSON {
		return c.printed(data, err)
	}
	fmt.Fprintf(c.stdout, "set secret %s of %s; their upstream sessions that read it restart\n", pos[1], pos[0])
	return nil
}

// printed prints the API's JSON answer of a call that succeeded.
func (c *adminClient) printed(data []byte, err error) error {
	if err != nil {
		return err
	}
	if len(data) == 0 {
		return nil
	}
	return c.printJSON(data)
}

// readSecretValue reads a secret's value: asked for without echo on a
// terminal, else all of stdin, without one trailing line break.
func readSecretValue(stdin io.Reader, prompt io.Writer, name string) (string, error) {
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(prompt, "value of %s (not shown): ", name)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(prompt)
		if err != nil {
			return "", fmt.Errorf("reading the value: %w", err)
		}
		return string(b), nil
	}
	b, err := io.ReadAll(io.LimitReader(stdin, usersecrets.MaxValue+2))
	if err != nil {
		return "", fmt.Errorf("reading the value from stdin: %w", err)
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	if len(b) == 0 {
		return "", fmt.Errorf("no value on stdin: pipe it in (mcphost users secret set SUBJECT %s < FILE), or run it on a terminal to be asked", name)
	}
	return string(b), nil
}

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/mcphost-project/mcphost/host/engine"
)

const usersUsage = `usage: mcphost users list|add|update|disable|enable|delete|key|secret [SUBJECT] [flags]

Manages the users of a running mcphost through its admin API: identities
whose API keys are kept in its store (as SHA-256 digests), beside the keys
of listen.auth in the config file, which are listed but cannot be changed
here. A change is in effect at once, on every replica within a second: a
revoked key, or a disabled or deleted user's, is refused and the sessions it
opened are closed.

  list                          the users, where each comes from, their keys
      mcphost users list
  add SUBJECT [--group G ...] [--attr K=V ...] [--key-name NAME] [--disabled]
                                add a user with one API key, printed this once
      mcphost users add alice --group eng --attr team=core --key-name laptop
  update SUBJECT [--group G ...] [--attr K=V ...]
                                replace its groups or attributes (--group "" or
                                --attr "" clears them); its sessions are closed
  disable SUBJECT               refuse its keys and close its sessions
  enable SUBJECT                accept its keys again
  delete SUBJECT                remove the user and its keys
  key add SUBJECT [--name NAME] another key, printed this once
  key rotate SUBJECT ID [--name NAME]
                                a new key, printed this once, and key ID revoked
                                in the same change
  key revoke SUBJECT ID         revoke a key; the sessions it opened are closed
      mcphost users key rotate alice 5f0c3a9e1b2d4c6f
  secret set SUBJECT NAME       set a secret of the caller (caller.secrets.NAME in
                                a server's settings), read from stdin, or asked
                                for without echo on a terminal; the caller's
                                upstream sessions that read it restart
      mcphost users secret set alice GITHUB_TOKEN < token.txt
  secret list SUBJECT           the names of the caller's secrets (never values)
  secret delete SUBJECT NAME    remove a secret; the sessions that read it restart

` + adminFlagsUsage

// usersArgs are the arguments of each users command, for its usage.
var usersArgs = map[string]string{
	"list":          " [--admin URL] [--key KEY] [--json]",
	"add":           " SUBJECT [--group G ...] [--attr K=V ...] [--key-name NAME] [--disabled]",
	"update":        " SUBJECT [--group G ...] [--attr K=V ...]",
	"disable":       " SUBJECT",
	"enable":        " SUBJECT",
	"delete":        " SUBJECT",
	"key add":       " SUBJECT [--name NAME]",
	"key rotate":    " SUBJECT ID [--name NAME]",
	"key revoke":    " SUBJECT ID",
	"secret set":    " SUBJECT NAME",
	"secret list":   " SUBJECT",
	"secret delete": " SUBJECT NAME",
}

// runUsers is `mcphost users`: a client of the admin API's /v1/users.
func runUsers(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usersUsage)
		return exitError(2)
	}
	if isHelp(args[0]) {
		fmt.Fprintln(stdout, usersUsage)
		return nil
	}
	sub, rest := args[0], args[1:]
	if sub == "key" || sub == "secret" {
		if len(rest) == 0 || isHelp(rest[0]) {
			if len(rest) == 0 {
				fmt.Fprintln(stderr, usersUsage)
				return exitError(2)
			}
			fmt.Fprintln(stdout, usersUsage)
			return nil
		}
		sub, rest = sub+" "+rest[0], rest[1:]
	}
	if _, ok := usersArgs[sub]; !ok {
		fmt.Fprintf(stderr, "mcphost users: unknown command %q\n\n%s\n", sub, usersUsage)
		return exitError(2)
	}
	fs := newFlagSet("users "+sub, fmt.Sprintf("usage: mcphost users %s%s\n\nRun \"mcphost users help\" for more.", sub, usersArgs[sub]), stdout, stderr)
	var o serversOptions
	o.flags(fs)
	var groups, attrs listFlag
	var keyName string
	var disabled bool
	switch sub {
	case "add", "update":
		fs.Var(&groups, "group", "a group of the user (repeatable); update replaces them all, --group \"\" clears them")
		fs.Var(&attrs, "attr", "an attribute K=V (repeatable); update replaces them all, --attr \"\" clears them")
	}
	switch sub {
	case "add":
		fs.StringVar(&keyName, "key-name", "", "a label for the user's first key")
		fs.BoolVar(&disabled, "disabled", false, "add the user disabled")
	case "key add", "key rotate":
		fs.StringVar(&keyName, "name", "", "a label for the key")
	}
	pos, err := fs.parse(rest)
	if err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	usage := func(msg string) error {
		fmt.Fprintf(stderr, "mcphost users %s: %s\nRun \"mcphost users\" for usage.\n", sub, msg)
		return exitError(2)
	}
	wantArgs := strings.Count(usersArgs[sub], " SUBJECT") + strings.Count(usersArgs[sub], " ID")
	if strings.HasPrefix(sub, "secret ") {
		wantArgs += strings.Count(usersArgs[sub], " NAME")
	}
	if len(pos) != wantArgs {
		return usage(fmt.Sprintf("takes %d argument(s): mcphost users %s%s", wantArgs, sub, usersArgs[sub]))
	}
	attrMap, err := attrFlags(attrs)
	if err != nil {
		return usage(err.Error())
	}
	o.resolve(given["admin"])
	c := &adminClient{base: o.base, key: o.key, asJSON: o.asJSON, stdout: stdout, stderr: stderr, hc: &http.Client{}, command: "users"}

	switch sub {
	case "list":
		return c.listUsers(ctx)
	case "add":
		body := map[string]any{"subject": pos[0], "groups": groupFlags(groups), "attributes": attrMap, "disabled": disabled, "keyName": keyName}
		return c.userWithKey(c.call(ctx, adminQuick, "POST", "/v1/users", body, nil))
	case "update":
		patch := map[string]any{}
		if given["group"] {
			patch["groups"] = groupFlags(groups)
		}
		if given["attr"] {
			patch["attributes"] = attrMap
		}
		if len(patch) == 0 {
			return usage("nothing to change: give --group or --attr")
		}
		return c.userChanged(c.call(ctx, adminQuick, "PATCH", userPath(pos[0]), patch, http.Header{"Content-Type": {"application/merge-patch+json"}}))
	case "disable", "enable":
		return c.userChanged(c.call(ctx, adminQuick, "PATCH", userPath(pos[0]), map[string]any{"disabled": sub == "disable"}, nil))
	case "delete":
		if _, err := c.call(ctx, adminQuick, "DELETE", userPath(pos[0]), nil, nil); err != nil {
			return err
		}
		if !c.asJSON {
			fmt.Fprintf(stdout, "removed %s and its keys\n", pos[0])
		}
		return nil
	case "secret set", "secret list", "secret delete":
		return c.userSecret(ctx, sub, pos, stdin)
	case "key add", "key rotate":
		body := map[string]any{"name": keyName}
		if sub == "key rotate" {
			body["replaces"] = pos[1]
		}
		return c.userWithKey(c.call(ctx, adminQuick, "POST", userPath(pos[0])+"/keys", body, nil))
	default: // key revoke
		if _, err := c.call(ctx, adminQuick, "DELETE", userPath(pos[0])+"/keys/"+url.PathEscape(pos[1]), nil, nil); err != nil {
			return err
		}
		if !c.asJSON {
			fmt.Fprintf(stdout, "revoked key %s of %s\n", pos[1], pos[0])
		}
		return nil
	}
}

// userPath is the API's path of the user subject.
func userPath(subject string) string { return "/v1/users/" + url.PathEscape(subject) }

// groupFlags is the --group values, with --group "" as none.
func groupFlags(groups listFlag) []string {
	out := []string{}
	for _, g := range groups {
		if g != "" {
			out = append(out, g)
		}
	}
	return out
}

// attrFlags reads --attr K=V values, with --attr "" as none.
func attrFlags(attrs listFlag) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range attrs {
		if a == "" {
			continue
		}
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--attr %q: want NAME=VALUE", a)
		}
		out[k] = v
	}
	return out, nil
}

func (c *adminClient) listUsers(ctx context.Context) error {
	data, err := c.call(ctx, adminQuick, "GET", "/v1/users", nil, nil)
	if err != nil {
		return err
	}
	if c.asJSON {
		return c.printJSON(data)
	}
	var doc struct {
		Users []engine.UserInfo `json:"users"`
	}
	if err := c.decodeAnswer(data, &doc, "a list of users"); err != nil {
		return err
	}
	if len(doc.Users) == 0 {
		fmt.Fprintln(c.stdout, "no users")
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SUBJECT\tSOURCE\tSTATE\tGROUPS\tKEYS")
	var notes []string
	for _, u := range doc.Users {
		state := "enabled"
		switch {
		case u.Problem != "":
			state = "refused"
			notes = append(notes, u.Subject+": "+oneLine(u.Problem))
		case u.Disabled:
			state = "disabled"
		}
		var keys []string
		for _, k := range u.Keys {
			keys = append(keys, keyLabel(k))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", u.Subject, u.Source, state, dash(strings.Join(u.Groups, ",")), dash(strings.Join(keys, " ")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(notes) > 0 {
		fmt.Fprintln(c.stdout)
		for _, n := range notes {
			fmt.Fprintln(c.stdout, n)
		}
	}
	return nil
}

// keyLabel is "ID(NAME)", "ID" or, for a key block of the file, "NAME".
func keyLabel(k engine.KeyInfo) string {
	switch {
	case k.ID == "":
		return k.Name
	case k.Name == "":
		return k.ID
	}
	return k.ID + "(" + k.Name + ")"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// userWithKey prints the answer of add, key add and key rotate: the key,
// which the API shows this once.
func (c *adminClient) userWithKey(data []byte, err error) error {
	if err != nil {
		return err
	}
	if c.asJSON {
		return c.printJSON(data)
	}
	var doc struct {
		User engine.UserInfo `json:"user"`
		Key  engine.NewKey   `json:"key"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || doc.Key.Key == "" {
		fmt.Fprintf(c.stderr, "mcphost users: the admin API answered what is not a user with a key: %v\n", err)
		return exitError(1)
	}
	fmt.Fprintf(c.stdout, "%s: key %s, shown this once (mcphost keeps only its SHA-256):\n%s\n", doc.User.Subject, keyLabel(doc.Key.KeyInfo), doc.Key.Key)
	return nil
}

// userChanged prints the answer of update, disable and enable.
func (c *adminClient) userChanged(data []byte, err error) error {
	if err != nil {
		return err
	}
	if c.asJSON {
		return c.printJSON(data)
	}
	var u engine.UserInfo
	if err := c.decodeAnswer(data, &u, "a user"); err != nil {
		return err
	}
	state := "enabled"
	if u.Disabled {
		state = "disabled"
	}
	attrs := make([]string, 0, len(u.Attributes))
	for k, v := range u.Attributes {
		attrs = append(attrs, k+"="+v)
	}
	slices.Sort(attrs)
	fmt.Fprintf(c.stdout, "%s: %s, groups %s, attributes %s\n", u.Subject, state, dash(strings.Join(u.Groups, ",")), dash(strings.Join(attrs, " ")))
	return nil
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// events collects the server's notifications.
type events struct {
	listChanged chan struct{}
	updated     chan string
}

func clientOptions(ev *events) *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			ev.listChanged <- struct{}{}
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			ev.updated <- req.Params.URI
		},
	}
}

// connect runs the notes server in-process on dir.
func connect(t *testing.T, dir string) (*mcp.ClientSession, *events) {
	t.Helper()
	ctx := context.Background()
	st, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	sT, cT := mcp.NewInMemoryTransports()
	ss, err := newServer(st, nil).Connect(ctx, sT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	ev := &events{listChanged: make(chan struct{}, 100), updated: make(chan string, 100)}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, clientOptions(ev)).Connect(ctx, cT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, ev
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
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: structured content %s: %v", name, b, err)
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
	if !res.IsError || !strings.Contains(text(res), want) {
		t.Fatalf("%s(%v): want a tool error mentioning %q, got isError=%v %s", name, args, want, res.IsError, text(res))
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

func wait[T any](t *testing.T, ch chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second): // generous: CI runs every package at once on two cores
		t.Fatalf("no %s", what)
		panic("unreachable")
	}
}

func TestToolsListed(t *testing.T) {
	t.Parallel()
	cs, _ := connect(t, t.TempDir())
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	type hints struct{ readOnly, destructive bool }
	want := map[string]hints{
		"add_note":     {false, false},
		"list_notes":   {true, false},
		"read_note":    {true, false},
		"search_notes": {true, false},
		"delete_note":  {false, true},
	}
	if len(res.Tools) != len(want) {
		t.Errorf("got %d tools, want %d", len(res.Tools), len(want))
	}
	for _, tool := range res.Tools {
		w, ok := want[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %q", tool.Name)
			continue
		}
		a := tool.Annotations
		if a == nil || tool.Title == "" || tool.OutputSchema == nil {
			t.Errorf("%s: want title, annotations and output schema", tool.Name)
			continue
		}
		if a.ReadOnlyHint != w.readOnly {
			t.Errorf("%s: readOnlyHint %v, want %v", tool.Name, a.ReadOnlyHint, w.readOnly)
		}
		if !w.readOnly && (a.DestructiveHint == nil || *a.DestructiveHint != w.destructive) {
			t.Errorf("%s: destructiveHint %v, want %v", tool.Name, a.DestructiveHint, w.destructive)
		}
	}
}

func TestTools(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cs, ev := connect(t, dir)

	if got := call[ListNotesOut](t, cs, "list_notes", nil); got.Count != 0 || got.Notes == nil {
		t.Errorf("empty store: list_notes = %+v, want zero notes as an empty list", got)
	}

	added := call[AddNoteOut](t, cs, "add_note", map[string]any{"name": "groceries", "content": "# Groceries\nmilk\nEggs"})
	if want := (AddNoteOut{Name: "groceries", URI: "notes://groceries", Created: true, Bytes: 21}); added != want {
		t.Errorf("add_note = %+v, want %+v", added, want)
	}
	wait(t, ev.listChanged, "resources/list_changed after add_note")
	call[AddNoteOut](t, cs, "add_note", map[string]any{"name": "todo-2024.q3", "content": "call the plumber\nbuy eggs for the cake"})
	if b, err := os.ReadFile(filepath.Join(dir, "groceries.md")); err != nil || string(b) != "# Groceries\nmilk\nEggs" {
		t.Errorf("file on disk: %q, %v", b, err)
	}

	callErr(t, cs, "add_note", map[string]any{"name": "groceries", "content": "bread"}, "already exists")
	appended := call[AddNoteOut](t, cs, "add_note", map[string]any{"name": "groceries", "content": "bread", "append": true})
	if appended.Created || appended.Bytes != 27 {
		t.Errorf("append: %+v", appended)
	}
	for _, bad := range []string{"../escape", "a/b", ".hidden", "", "x..y", strings.Repeat("n", 65)} {
		callErr(t, cs, "add_note", map[string]any{"name": bad, "content": "x"}, "invalid note name")
	}

	list := call[ListNotesOut](t, cs, "list_notes", nil)
	var names []string
	for _, n := range list.Notes {
		names = append(names, n.Name)
		if n.URI != "notes://"+n.Name || n.Bytes == 0 || n.Modified == "" {
			t.Errorf("list_notes entry %+v", n)
		}
	}
	if list.Count != 2 || !slices.Equal(names, []string{"groceries", "todo-2024.q3"}) {
		t.Errorf("list_notes = %v (count %d)", names, list.Count)
	}

	read := call[ReadNoteOut](t, cs, "read_note", map[string]any{"name": "groceries"})
	if read.Content != "# Groceries\nmilk\nEggs\nbread" || read.URI != "notes://groceries" {
		t.Errorf("read_note = %+v", read)
	}
	callErr(t, cs, "read_note", map[string]any{"name": "missing"}, "no such note")

	found := call[SearchNotesOut](t, cs, "search_notes", map[string]any{"query": "EGGS"})
	want := []SearchMatch{
		{Name: "groceries", URI: "notes://groceries", Line: 3, Text: "Eggs"},
		{Name: "todo-2024.q3", URI: "notes://todo-2024.q3", Line: 2, Text: "buy eggs for the cake"},
	}
	if !slices.Equal(found.Matches, want) || found.Truncated {
		t.Errorf("search_notes(EGGS) = %+v, want %+v", found, want)
	}
	if got := call[SearchNotesOut](t, cs, "search_notes", map[string]any{"query": "e", "limit": 2}); len(got.Matches) != 2 || !got.Truncated {
		t.Errorf("search_notes with limit 2 = %+v", got)
	}
	if got := call[SearchNotesOut](t, cs, "search_notes", map[string]any{"query": "todo"}); len(got.Matches) != 1 || got.Matches[0].Line != 0 {
		t.Errorf("search_notes(todo) should match the name: %+v", got)
	}
	if got := call[SearchNotesOut](t, cs, "search_notes", map[string]any{"query": "zebra"}); got.Matches == nil || len(got.Matches) != 0 {
		t.Errorf("search_notes(zebra) = %+v, want an empty list", got)
	}
	callErr(t, cs, "search_notes", map[string]any{"query": "  "}, "empty")
	callErr(t, cs, "search_notes", map[string]any{"query": "a", "limit": 1000}, "out of range")

	if got := call[DeleteNoteOut](t, cs, "delete_note", map[string]any{"name": "groceries"}); !got.Deleted {
		t.Errorf("delete_note = %+v", got)
	}
	if got := call[DeleteNoteOut](t, cs, "delete_note", map[string]any{"name": "groceries"}); got.Deleted {
		t.Errorf("second delete_note = %+v, want deleted false", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "groceries.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("file still there: %v", err)
	}
	if got := call[ListNotesOut](t, cs, "list_notes", nil); got.Count != 1 {
		t.Errorf("after delete: %+v", got)
	}
}

func TestResources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A note that was there before the server started.
	if err := os.WriteFile(filepath.Join(dir, "old.md"), []byte("from before"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Files that are not notes.
	os.WriteFile(filepath.Join(dir, "readme.txt"), []byte("not a note"), 0o600)
	os.Mkdir(filepath.Join(dir, "sub.md"), 0o700)
	cs, ev := connect(t, dir)
	ctx := context.Background()

	uris := func() []string {
		t.Helper()
		res, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range res.Resources {
			if r.MIMEType != "text/markdown" {
				t.Errorf("%s: MIME type %q", r.URI, r.MIMEType)
			}
			out = append(out, r.URI)
		}
		slices.Sort(out)
		return out
	}
	if got := uris(); !slices.Equal(got, []string{"notes://old"}) {
		t.Errorf("resources = %v", got)
	}
	tmpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tmpl.ResourceTemplates) != 1 || tmpl.ResourceTemplates[0].URITemplate != "notes://{name}" {
		t.Fatalf("resource templates = %+v, %v", tmpl, err)
	}

	call[AddNoteOut](t, cs, "add_note", map[string]any{"name": "fresh", "content": "new text"})
	wait(t, ev.listChanged, "resources/list_changed")
	// A note written behind the server's back appears on the next list.
	os.WriteFile(filepath.Join(dir, "sideways.md"), []byte("dropped in"), 0o600)
	if got := uris(); !slices.Equal(got, []string{"notes://fresh", "notes://old", "notes://sideways"}) {
		t.Errorf("resources = %v", got)
	}

	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://fresh"})
	if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != "new text" || read.Contents[0].MIMEType != "text/markdown" {
		t.Fatalf("read notes://fresh = %+v, %v", read, err)
	}
	// Reading through the template works before the note is listed.
	os.WriteFile(filepath.Join(dir, "unlisted.md"), []byte("via template"), 0o600)
	read, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://unlisted"})
	if err != nil || read.Contents[0].Text != "via template" {
		t.Fatalf("read notes://unlisted = %+v, %v", read, err)
	}
	for _, uri := range []string{"notes://missing", "notes://a/b", "notes://..", "other://old"} {
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeResourceNotFound {
			t.Errorf("read %s: want resource not found, got %v", uri, err)
		}
	}

	// Subscribers hear of appends and deletes.
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "notes://fresh"}); err != nil {
		t.Fatal(err)
	}
	call[AddNoteOut](t, cs, "add_note", map[string]any{"name": "fresh", "content": "more", "append": true})
	if uri := wait(t, ev.updated, "resources/updated after append"); uri != "notes://fresh" {
		t.Errorf("updated %s", uri)
	}
	call[DeleteNoteOut](t, cs, "delete_note", map[string]any{"name": "fresh"})
	if uri := wait(t, ev.updated, "resources/updated after delete"); uri != "notes://fresh" {
		t.Errorf("updated %s", uri)
	}
	if got := uris(); slices.Contains(got, "notes://fresh") {
		t.Errorf("deleted note still listed: %v", got)
	}

	comp, err := cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "notes://{name}"},
		Argument: mcp.CompleteParamsArgument{Name: "name", Value: "s"},
	})
	if err != nil || !slices.Equal(comp.Completion.Values, []string{"sideways"}) {
		t.Errorf("complete(s) = %+v, %v", comp, err)
	}
}

func TestPrompt(t *testing.T) {
	t.Parallel()
	cs, _ := connect(t, t.TempDir())
	ctx := context.Background()
	list, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(list.Prompts) != 1 || list.Prompts[0].Name != "summarize_notes" {
		t.Fatalf("prompts = %+v, %v", list, err)
	}

	get := func(args map[string]string) *mcp.GetPromptResult {
		t.Helper()
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "summarize_notes", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := get(nil); len(res.Messages) != 1 || !strings.Contains(res.Messages[0].Content.(*mcp.TextContent).Text, "no notes") {
		t.Errorf("no notes: %+v", res.Messages)
	}

	call[AddNoteOut](t, cs, "add_note", map[string]any{"name": "a", "content": "about Go"})
	call[AddNoteOut](t, cs, "add_note", map[string]any{"name": "b", "content": "about Wasm"})
	res := get(nil)
	if len(res.Messages) != 3 {
		t.Fatalf("want an instruction and 2 notes, got %d messages", len(res.Messages))
	}
	er, ok := res.Messages[1].Content.(*mcp.EmbeddedResource)
	if !ok || er.Resource.URI != "notes://a" || er.Resource.Text != "about Go" || res.Messages[1].Role != "user" {
		t.Errorf("first note message: %+v", res.Messages[1])
	}
	res = get(map[string]string{"topic": "wasm"})
	if len(res.Messages) != 2 || res.Messages[1].Content.(*mcp.EmbeddedResource).Resource.URI != "notes://b" {
		t.Errorf("topic wasm: %+v", res.Messages)
	}
}

func TestRunStdio(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-dir", dir}, inR, outW, io.Discard)
		outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).
		Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	call[AddNoteOut](t, cs, "add_note", map[string]any{"name": "x", "content": "y"})
	if _, err := os.Stat(filepath.Join(dir, "x.md")); err != nil {
		t.Error(err)
	}
	cs.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run returned %v on end of input, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after end of input")
	}
}

// TestRunFlags stays serial, unlike the other tests: it sets NOTES_DIR.
func TestRunFlags(t *testing.T) {
	var stderr strings.Builder
	if err := run(context.Background(), []string{"-h"}, strings.NewReader(""), io.Discard, &stderr); err != nil {
		t.Errorf("-h: %v", err)
	}
	if !strings.Contains(stderr.String(), "usage: notes") {
		t.Errorf("-h printed %q", stderr.String())
	}
	if err := run(context.Background(), []string{"extra"}, strings.NewReader(""), io.Discard, io.Discard); err == nil {
		t.Error("want an error for a stray argument")
	}
	t.Setenv("NOTES_DIR", "/from/env")
	if got := defaultDir(); got != "/from/env" {
		t.Errorf("defaultDir with NOTES_DIR = %q", got)
	}
	t.Setenv("NOTES_DIR", "")
	if got := defaultDir(); got != filepath.Join(os.TempDir(), "mcphost-notes") {
		t.Errorf("defaultDir = %q", got)
	}
}

// TestSubprocess builds the real binary and talks to it over stdio, the way
// mcphost runs an upstream, with the directory from the environment.
func TestSubprocess(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "notes")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "NOTES_DIR="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if info := cs.InitializeResult().ServerInfo; info.Name != "notes" {
		t.Errorf("server name %q, want notes", info.Name)
	}
	call[AddNoteOut](t, cs, "add_note", map[string]any{"name": "hello", "content": "hello world"})
	if got := call[ListNotesOut](t, cs, "list_notes", nil); got.Count != 1 {
		t.Errorf("list_notes: %+v", got)
	}
	if got := call[ReadNoteOut](t, cs, "read_note", map[string]any{"name": "hello"}); got.Content != "hello world" {
		t.Errorf("read_note: %+v", got)
	}
	if got := call[SearchNotesOut](t, cs, "search_notes", map[string]any{"query": "WORLD"}); len(got.Matches) != 1 {
		t.Errorf("search_notes: %+v", got)
	}
	if r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://hello"}); err != nil || r.Contents[0].Text != "hello world" {
		t.Errorf("read resource: %+v, %v", r, err)
	}
	if p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "summarize_notes"}); err != nil || len(p.Messages) != 2 {
		t.Errorf("get prompt: %+v, %v", p, err)
	}
	if got := call[DeleteNoteOut](t, cs, "delete_note", map[string]any{"name": "hello"}); !got.Deleted {
		t.Errorf("delete_note: %+v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "hello.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("note file after delete: %v", err)
	}
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

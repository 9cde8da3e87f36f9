package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// version is reported in the server's implementation info.
const version = "0.1.0"

const (
	scheme      = "notes"
	uriTemplate = "notes://{name}"
	mimeType    = "text/markdown"
)

func noteURI(name string) string { return scheme + "://" + name }

// nameFromURI returns NAME from notes://NAME.
func nameFromURI(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != scheme || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return "", false
	}
	return u.Host, checkName(u.Host) == nil
}

// NoteSummary describes a note without its text.
type NoteSummary struct {
	Name     string `json:"name" jsonschema:"the note's name"`
	URI      string `json:"uri" jsonschema:"the note as an MCP resource, notes://NAME"`
	Bytes    int64  `json:"bytes" jsonschema:"the note's size in bytes"`
	Modified string `json:"modified" jsonschema:"when the note last changed, RFC 3339"`
}

// AddNoteIn is the input of add_note.
type AddNoteIn struct {
	Name    string `json:"name" jsonschema:"the note's name: letters, digits, '_', '-' or '.', at most 64"`
	Content string `json:"content" jsonschema:"the text to store (Markdown welcome)"`
	Append  bool   `json:"append,omitempty" jsonschema:"add the text to the end of an existing note instead of failing when it exists"`
}

// AddNoteOut is the output of add_note.
type AddNoteOut struct {
	Name    string `json:"name" jsonschema:"the note's name"`
	URI     string `json:"uri" jsonschema:"the note as an MCP resource"`
	Created bool   `json:"created" jsonschema:"true if the note is new, false if the text was appended"`
	Bytes   int64  `json:"bytes" jsonschema:"the note's size in bytes now"`
}

// ListNotesOut is the output of list_notes.
type ListNotesOut struct {
	Notes []NoteSummary `json:"notes" jsonschema:"every note, by name"`
	Count int           `json:"count" jsonschema:"how many notes there are"`
}

// NameIn names one note.
type NameIn struct {
	Name string `json:"name" jsonschema:"the note's name"`
}

// ReadNoteOut is the output of read_note.
type ReadNoteOut struct {
	Name     string `json:"name" jsonschema:"the note's name"`
	URI      string `json:"uri" jsonschema:"the note as an MCP resource"`
	Content  string `json:"content" jsonschema:"the note's text"`
	Modified string `json:"modified" jsonschema:"when the note last changed, RFC 3339"`
}

// SearchNotesIn is the input of search_notes.
type SearchNotesIn struct {
	Query string `json:"query" jsonschema:"text to look for in note names and lines, ignoring case"`
	Limit int    `json:"limit,omitempty" jsonschema:"most matches to return, 1 to 100; default 20"`
}

// SearchMatch is one line that matched.
type SearchMatch struct {
	Name string `json:"name" jsonschema:"the note's name"`
	URI  string `json:"uri" jsonschema:"the note as an MCP resource"`
	Line int    `json:"line" jsonschema:"the 1-based line number; 0 when the note's name matched"`
	Text string `json:"text" jsonschema:"the matching line"`
}

// SearchNotesOut is the output of search_notes.
type SearchNotesOut struct {
	Matches   []SearchMatch `json:"matches" jsonschema:"matching lines, by note name then line"`
	Truncated bool          `json:"truncated" jsonschema:"true if there were more matches than limit"`
}

// DeleteNoteOut is the output of delete_note.
type DeleteNoteOut struct {
	Name    string `json:"name" jsonschema:"the note's name"`
	Deleted bool   `json:"deleted" jsonschema:"false if there was no such note"`
}

// notes binds a store to an MCP server.
type notes struct {
	store  *store
	server *mcp.Server
	logger *slog.Logger

	mu     sync.Mutex
	listed map[string]bool // names registered as resources
}

// newServer returns the notes server for a store.
func newServer(st *store, logger *slog.Logger) *mcp.Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	n := &notes{store: st, logger: logger, listed: map[string]bool{}}
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Title: "Notes", Version: version}, &mcp.ServerOptions{
		Instructions:      "A notes store. Each note is also the resource notes://NAME.",
		Logger:            logger,
		CompletionHandler: n.complete,
		// Any note may be watched; add_note and delete_note announce changes.
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	n.server = s

	mcp.AddTool(s, &mcp.Tool{
		Name:        "add_note",
		Title:       "Add a note",
		Description: "Creates a note, or with append set adds text to the end of an existing one. Never overwrites.",
		Annotations: &mcp.ToolAnnotations{Title: "Add a note", DestructiveHint: new(false), OpenWorldHint: new(false)},
	}, n.addNote)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "list_notes",
		Title:       "List notes",
		Description: "Lists every note with its size and when it last changed.",
		Annotations: &mcp.ToolAnnotations{Title: "List notes", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}, n.listNotes)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "read_note",
		Title:       "Read a note",
		Description: "Returns the text of one note.",
		Annotations: &mcp.ToolAnnotations{Title: "Read a note", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}, n.readNote)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "search_notes",
		Title:       "Search notes",
		Description: "Finds the lines of every note, and the note names, that contain some text, ignoring case.",
		Annotations: &mcp.ToolAnnotations{Title: "Search notes", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}, n.searchNotes)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "delete_note",
		Title:       "Delete a note",
		Description: "Deletes a note for good.",
		Annotations: &mcp.ToolAnnotations{Title: "Delete a note", DestructiveHint: new(true), IdempotentHint: true, OpenWorldHint: new(false)},
	}, n.deleteNote)

	s.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:        "note",
		Title:       "Note",
		Description: "A note by name.",
		URITemplate: uriTemplate,
		MIMEType:    mimeType,
	}, n.readResource)

	s.AddPrompt(&mcp.Prompt{
		Name:        "summarize_notes",
		Title:       "Summarize notes",
		Description: "Asks for a short summary of the notes, each attached as a resource.",
		Arguments: []*mcp.PromptArgument{{
			Name:        "topic",
			Title:       "Topic",
			Description: "only notes that mention this text; all notes when empty",
		}},
	}, n.summarizePrompt)

	// Notes written to the directory by other means show up on the next
	// resources/list.
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "resources/list" {
				n.sync()
			}
			return next(ctx, method, req)
		}
	})
	n.sync()
	return s
}

// sync registers every note as a resource and drops the ones that are gone.
// The server tells clients when the list changes.
func (n *notes) sync() {
	infos, err := n.store.list()
	if err != nil {
		n.logger.Warn("listing notes", "err", err)
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	seen := make(map[string]bool, len(infos))
	for _, info := range infos {
		seen[info.Name] = true
		if n.listed[info.Name] {
			continue
		}
		n.listed[info.Name] = true
		n.server.AddResource(&mcp.Resource{
			Name:     info.Name,
			Title:    info.Name,
			URI:      noteURI(info.Name),
			MIMEType: mimeType,
		}, n.readResource)
	}
	var gone []string
	for name := range n.listed {
		if !seen[name] {
			delete(n.listed, name)
			gone = append(gone, noteURI(name))
		}
	}
	if len(gone) > 0 {
		n.server.RemoveResources(gone...)
	}
}

func (n *notes) addNote(ctx context.Context, _ *mcp.CallToolRequest, in AddNoteIn) (*mcp.CallToolResult, AddNoteOut, error) {
	created, size, err := n.store.add(in.Name, in.Content, in.Append)
	if err != nil {
		return nil, AddNoteOut{}, err
	}
	if created {
		n.sync()
	} else {
		n.updated(ctx, in.Name)
	}
	return nil, AddNoteOut{Name: in.Name, URI: noteURI(in.Name), Created: created, Bytes: size}, nil
}

func (n *notes) listNotes(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, ListNotesOut, error) {
	infos, err := n.store.list()
	if err != nil {
		return nil, ListNotesOut{}, err
	}
	out := ListNotesOut{Notes: make([]NoteSummary, 0, len(infos)), Count: len(infos)}
	for _, info := range infos {
		out.Notes = append(out.Notes, NoteSummary{
			Name:     info.Name,
			URI:      noteURI(info.Name),
			Bytes:    info.Size,
			Modified: info.Modified.UTC().Format(time.RFC3339),
		})
	}
	return nil, out, nil
}

func (n *notes) readNote(_ context.Context, _ *mcp.CallToolRequest, in NameIn) (*mcp.CallToolResult, ReadNoteOut, error) {
	text, mod, err := n.store.read(in.Name)
	if err != nil {
		return nil, ReadNoteOut{}, err
	}
	return nil, ReadNoteOut{Name: in.Name, URI: noteURI(in.Name), Content: text, Modified: mod.UTC().Format(time.RFC3339)}, nil
}

func (n *notes) searchNotes(_ context.Context, _ *mcp.CallToolRequest, in SearchNotesIn) (*mcp.CallToolResult, SearchNotesOut, error) {
	if strings.TrimSpace(in.Query) == "" {
		return nil, SearchNotesOut{}, errors.New("query is empty")
	}
	limit := in.Limit
	switch {
	case limit == 0:
		limit = 20
	case limit < 1 || limit > 100:
		return nil, SearchNotesOut{}, fmt.Errorf("limit %d is out of range 1 to 100", limit)
	}
	found, more, err := n.store.search(in.Query, limit)
	if err != nil {
		return nil, SearchNotesOut{}, err
	}
	out := SearchNotesOut{Matches: make([]SearchMatch, 0, len(found)), Truncated: more}
	for _, m := range found {
		out.Matches = append(out.Matches, SearchMatch{Name: m.Name, URI: noteURI(m.Name), Line: m.Line, Text: m.Text})
	}
	return nil, out, nil
}

func (n *notes) deleteNote(ctx context.Context, _ *mcp.CallToolRequest, in NameIn) (*mcp.CallToolResult, DeleteNoteOut, error) {
	deleted, err := n.store.remove(in.Name)
	if err != nil {
		return nil, DeleteNoteOut{}, err
	}
	if deleted {
		n.sync()
		n.updated(ctx, in.Name)
	}
	return nil, DeleteNoteOut{Name: in.Name, Deleted: deleted}, nil
}

// updated tells subscribers that a note changed.
func (n *notes) updated(ctx context.Context, name string) {
	if err := n.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: noteURI(name)}); err != nil {
		n.logger.Warn("resource updated notification", "uri", noteURI(name), "err", err)
	}
}

func (n *notes) readResource(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	name, ok := nameFromURI(uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	text, _, err := n.store.read(name)
	if errors.Is(err, errNotFound) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mimeType, Text: text}}}, nil
}

func (n *notes) summarizePrompt(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	topic := strings.TrimSpace(req.Params.Arguments["topic"])
	infos, err := n.store.list()
	if err != nil {
		return nil, err
	}
	var attached []mcp.Content
	for _, info := range infos {
		text, _, err := n.store.read(info.Name)
		if err != nil {
			continue // removed meanwhile
		}
		if topic != "" && !strings.Contains(strings.ToLower(info.Name+"\n"+text), strings.ToLower(topic)) {
			continue
		}
		attached = append(attached, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: noteURI(info.Name), MIMEType: mimeType, Text: text}})
	}

	about := "my notes"
	if topic != "" {
		about = fmt.Sprintf("my notes about %q", topic)
	}
	var ask string
	switch len(attached) {
	case 0:
		ask = fmt.Sprintf("I have no notes yet matching %s. Say so, and suggest what I might write down.", about)
	case 1:
		ask = fmt.Sprintf("Summarize %s in a few bullet points. The note follows.", about)
	default:
		ask = fmt.Sprintf("Summarize %s in a few bullet points, grouping related ideas and naming the note each comes from. The %d notes follow.", about, len(attached))
	}
	msgs := []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: ask}}}
	for _, c := range attached {
		msgs = append(msgs, &mcp.PromptMessage{Role: "user", Content: c})
	}
	return &mcp.GetPromptResult{Description: "Summary of " + about, Messages: msgs}, nil
}

// complete offers note names for the resource template's {name}.
func (n *notes) complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	res := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
	ref := req.Params.Ref
	if ref == nil || ref.Type != "ref/resource" || ref.URI != uriTemplate || req.Params.Argument.Name != "name" {
		return res, nil
	}
	infos, err := n.store.list()
	if err != nil {
		return nil, err
	}
	const max = 100 // the spec's limit per response
	for _, info := range infos {
		if !strings.HasPrefix(info.Name, req.Params.Argument.Value) {
			continue
		}
		res.Completion.Total++
		if len(res.Completion.Values) < max {
			res.Completion.Values = append(res.Completion.Values, info.Name)
		}
	}
	res.Completion.HasMore = res.Completion.Total > len(res.Completion.Values)
	return res, nil
}

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

// RawSession is a minimal streamable HTTP client: it sends JSON-RPC
// requests and hands back the response bytes without decoding them. It
// measures what a server takes to answer, apart from what a full client
// takes to decode (the go-sdk client spends several times longer turning
// 1000 tools into Go values than a server spends listing them).
type RawSession struct {
	url, protocol, session string
	header                 http.Header
	client                 *http.Client
	id                     atomic.Int64
}

// DialRaw initializes a session with the server at url (a streamable HTTP
// endpoint), asking for protocolVersion.
func DialRaw(ctx context.Context, url, protocolVersion string, header http.Header) (*RawSession, error) {
	t := Target{URL: url, Header: header}
	s := &RawSession{url: url, protocol: protocolVersion, header: header, client: t.httpClient()}
	init := map[string]any{
		"protocolVersion": protocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "mcphost-bench-raw", "version": "1.0.0"},
	}
	resp, hdr, err := s.post(ctx, "initialize", init, true)
	if err != nil {
		return nil, err
	}
	var r struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if err := json.Unmarshal(resp, &r); err != nil || r.Result.ProtocolVersion == "" {
		return nil, fmt.Errorf("bench: initialize answered %.200q", resp)
	}
	s.protocol = r.Result.ProtocolVersion
	s.session = hdr.Get("Mcp-Session-Id")
	if _, _, err := s.post(ctx, "notifications/initialized", nil, false); err != nil {
		return nil, err
	}
	return s, nil
}

// Call sends one request and returns the JSON-RPC response, as sent. A
// JSON-RPC error comes back as an error.
func (s *RawSession) Call(ctx context.Context, method string, params any) ([]byte, error) {
	b, _, err := s.post(ctx, method, params, true)
	return b, err
}

// ListTools lists every page of tools and returns the response bodies.
func (s *RawSession) ListTools(ctx context.Context) ([][]byte, error) {
	var pages [][]byte
	cursor := ""
	for {
		var params any
		if cursor != "" {
			params = map[string]string{"cursor": cursor}
		}
		b, err := s.Call(ctx, "tools/list", params)
		if err != nil {
			return pages, err
		}
		pages = append(pages, b)
		cursor = nextCursor(b)
		if cursor == "" || len(pages) > 1000 {
			return pages, nil
		}
	}
}

// CountTools decodes pages from ListTools and counts the tools.
func CountTools(pages [][]byte) (int, error) {
	n := 0
	for _, p := range pages {
		var r struct {
			Result struct {
				Tools []json.RawMessage `json:"tools"`
			} `json:"result"`
		}
		if err := json.Unmarshal(p, &r); err != nil {
			return 0, err
		}
		n += len(r.Result.Tools)
	}
	return n, nil
}

// nextCursor finds result.nextCursor without decoding the whole response:
// go-sdk servers write it before the tools, and cursors are base64.
func nextCursor(b []byte) string {
	i := bytes.Index(b, []byte(`"nextCursor":"`))
	if i < 0 {
		return ""
	}
	rest := b[i+len(`"nextCursor":"`):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

// Close ends the session on the server.
func (s *RawSession) Close() error {
	if s.session == "" {
		return nil
	}
	req, err := http.NewRequest(http.MethodDelete, s.url, nil)
	if err != nil {
		return err
	}
	s.headers(req)
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

func (s *RawSession) headers(req *http.Request) {
	for k, vs := range s.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.session != "" {
		req.Header.Set("Mcp-Session-Id", s.session)
	}
	if s.protocol != "" {
		req.Header.Set("Mcp-Protocol-Version", s.protocol)
	}
}

func (s *RawSession) post(ctx context.Context, method string, params any, isCall bool) ([]byte, http.Header, error) {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	var id int64
	if isCall {
		id = s.id.Add(1)
		msg["id"] = id
	}
	if params != nil {
		msg["params"] = params
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	s.headers(req)
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := readBody(resp)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, nil, fmt.Errorf("bench: %s: HTTP %s: %.200s", method, resp.Status, data)
	}
	if !isCall {
		return nil, resp.Header, nil
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data, err = responseEvent(data, id)
		if err != nil {
			return nil, nil, fmt.Errorf("bench: %s: %w", method, err)
		}
	}
	if bytes.Contains(data[:min(len(data), 200)], []byte(`"error":`)) {
		var e struct {
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error != nil {
			return nil, nil, fmt.Errorf("bench: %s: JSON-RPC error %d: %s", method, e.Error.Code, e.Error.Message)
		}
	}
	return data, resp.Header, nil
}

// readBody reads a response body into a buffer of its declared length, so
// a large answer costs the client one allocation rather than io.ReadAll's
// repeated doubling (event streams declare none and are read as they come).
func readBody(resp *http.Response) ([]byte, error) {
	if n := resp.ContentLength; n > 0 && n < 1<<30 {
		buf := make([]byte, n)
		_, err := io.ReadFull(resp.Body, buf)
		return buf, err
	}
	return io.ReadAll(resp.Body)
}

// responseEvent picks the response to request id out of an event stream:
// the first event whose data has "id":ID near its start.
func responseEvent(stream []byte, id int64) ([]byte, error) {
	want := []byte(`"id":` + strconv.FormatInt(id, 10))
	for ev := range bytes.SplitSeq(stream, []byte("\n\n")) {
		var data []byte
		for line := range bytes.SplitSeq(ev, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
			}
		}
		if bytes.Contains(data[:min(len(data), 64)], want) { // "id" comes first in go-sdk and TypeScript responses

			return data, nil
		}
	}
	return nil, errors.New("no response in the event stream")
}

package tasks

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func TestDecodeStatus(t *testing.T) {
	m, id, err := DecodeStatus(json.RawMessage(`{"taskId":"t-1","status":"working","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-1"}}}`))
	if err != nil || id != "t-1" || string(m["status"]) != `"working"` || m["_meta"] != nil {
		t.Errorf("DecodeStatus: %v %q %v", m, id, err)
	}
	for _, bad := range []string{``, `null`, `[]`, `{}`, `{"taskId":""}`, `{"taskId":7}`} {
		if _, _, err := DecodeStatus(json.RawMessage(bad)); err == nil {
			t.Errorf("DecodeStatus(%s): no error", bad)
		}
	}
}

func FuzzDecodeStatus(f *testing.F) {
	f.Add([]byte(`{"taskId":"t-1","status":"completed","createdAt":"x","lastUpdatedAt":"y","ttl":null}`))
	f.Add([]byte(`{"taskId":"a","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"b"},"k":1}}`))
	f.Add([]byte(`{"taskId":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, id, err := DecodeStatus(b)
		if err != nil {
			return
		}
		var again string
		if id == "" || json.Unmarshal(m["taskId"], &again) != nil || again != id {
			t.Fatalf("DecodeStatus(%q): id %q, members %v", b, id, m)
		}
		var meta map[string]json.RawMessage
		if json.Unmarshal(m["_meta"], &meta) == nil && meta[RelatedTaskKey] != nil {
			t.Fatalf("DecodeStatus(%q) kept the server's related task", b)
		}
	})
}

// TestStatusIntoEventStream: status notifications go into the event stream
// of the session they are for, between the handler's own events and never
// inside one, and nowhere when the handler refused the stream. Real HTTP;
// the handler writes events as the go-sdk does, while notifications are
// sent from other goroutines.
func TestStatusIntoEventStream(t *testing.T) {
	s := &Service{IDs: NewIDs(nil), Runner: NewRunner(Limits{})}
	defer s.Runner.Close()
	release := make(chan struct{})
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Session-Id") == "refused" {
			http.Error(w, "no", http.StatusConflict)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, ": ok\n\n")
		http.NewResponseController(w).Flush()
		for i := 0; i < 200; i++ {
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"n\":%d}}\n\n", i)
			http.NewResponseController(w).Flush()
		}
		<-release
	})
	srv := httptest.NewServer(s.Handler(next))
	defer srv.Close()
	open := func(sid string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	a, refused := open("a"), open("refused")
	defer a.Body.Close()
	refused.Body.Close()
	if refused.StatusCode != http.StatusConflict {
		t.Fatalf("refused stream: HTTP %d", refused.StatusCode)
	}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 25; j++ {
				s.statusNotifier("a", "alice")(Task{TaskID: "t", Status: Completed})
				s.statusNotifier("refused", "alice")(Task{TaskID: "t", Status: Completed})
			}
		}()
	}
	wg.Wait()
	close(release)
	sc := bufio.NewScanner(a.Body)
	statuses, messages := 0, 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line == ": ok" || line == "event: message" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		var m struct {
			Method string
			Params map[string]any
		}
		if !ok || json.Unmarshal([]byte(data), &m) != nil {
			t.Fatalf("a torn event line: %q", line)
		}
		switch m.Method {
		case StatusMethod:
			statuses++
			if id, _ := m.Params["taskId"].(string); !strings.HasPrefix(id, "mcpt1.") {
				t.Errorf("a status under the Runner's own id: %s", data)
			}
		case "notifications/message":
			messages++
		}
	}
	if statuses != 100 || messages != 200 {
		t.Errorf("%d status notifications and %d of the handler's, want 100 and 200", statuses, messages)
	}
}

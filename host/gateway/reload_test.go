package gateway

import (
	"errors"
	"maps"
	"testing"
)

// The failures in a row count every kind of reload, and split the count by
// kind, so that status does not give them all the latest one's label.
func TestNoteReloadCountsByTrigger(t *testing.T) {
	h := &Host{}
	fail := errors.New("broken")
	for _, trigger := range []string{"plugin files", "plugin files", "config"} {
		h.NoteReload(trigger, fail)
	}
	r := h.reloadStatus()
	want := map[string]int{"plugin files": 2, "config": 1}
	if r.OK || r.Trigger != "config" || r.Failures != 3 || !maps.Equal(r.FailuresByTrigger, want) {
		t.Fatalf("after 3 failed reloads: %+v", r)
	}
	h.NoteReload("plugin files", nil)
	if r := h.reloadStatus(); !r.OK || r.Failures != 0 || r.FailuresByTrigger != nil {
		t.Fatalf("after a reload that took: %+v", r)
	}
	h.NoteReload("config", fail)
	if r := h.reloadStatus(); r.Failures != 1 || !maps.Equal(r.FailuresByTrigger, map[string]int{"config": 1}) {
		t.Fatalf("after a failure that follows a success: %+v", r)
	}
}

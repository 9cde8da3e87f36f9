package pins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/mcphost-project/mcphost/filters/policies"
	"github.com/mcphost-project/mcphost/host/store"
)

// Store is what Shared needs of the store (host/store.Store has it).
type Store interface {
	PinsRevision(ctx context.Context) (int64, error)
	Pins(ctx context.Context, plugin string) ([]store.Pin, int64, error)
	PutPin(ctx context.Context, plugin, key string, entry []byte, ifVersion int64) (int64, error)
}

var _ Store = (*store.Store)(nil)

// Shared keeps the pin files of one process in line with a store that
// several replicas share, so that a tool pinned, changed or approved on
// one replica is pinned, hidden or admitted on all.
//
// The plugin keeps reading and writing its own file; Sync merges each
// file with the store three ways, against what the last Sync saw of
// both: a tool whose entry changed only in the file (pinned on first
// sight, a change seen, an approval) is written to the store, if the
// store still holds what was seen; a tool whose entry changed in the
// store is written to the file, whatever the file holds (the store wins a
// conflict: the replica that wrote first). Sync is called every few
// seconds, and right after an approval.
type Shared struct {
	st Store

	mu   sync.Mutex
	seen map[string]*seenPlugin // by plugin name
}

type seenPlugin struct {
	rev  int64 // the pins revision read last
	size int64 // the file's size and time when read last
	mod  time.Time
	keys map[string]seenPin
}

type seenPin struct {
	entry   []byte // canonical JSON; nil: none
	version int64  // the store's; 0: none
}

// NewShared returns a Shared on st; it has seen nothing yet, so its
// first Sync takes the store's entries over the files' and adds the
// files' other entries to the store.
func NewShared(st Store) *Shared {
	return &Shared{st: st, seen: map[string]*seenPlugin{}}
}

// Sync merges the pin file of each of ps with the store. It reports
// whether it changed a file: the plugins must then recompute their
// listings (reload). A plugin whose file and store are unchanged since
// the last Sync costs a stat and one small query.
func (s *Shared) Sync(ctx context.Context, ps []Plugin) (changed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rev, err := s.st.PinsRevision(ctx)
	if err != nil {
		return false, err
	}
	var errs []error
	for _, p := range ps {
		c, err := s.syncOne(ctx, p, rev)
		changed = changed || c
		if err != nil {
			errs = append(errs, err)
		}
	}
	return changed, errors.Join(errs...)
}

func (s *Shared) syncOne(ctx context.Context, p Plugin, rev int64) (bool, error) {
	seen := s.seen[p.Name]
	if seen == nil {
		seen = &seenPlugin{rev: -1, keys: map[string]seenPin{}}
		s.seen[p.Name] = seen
	}
	fi, statErr := os.Stat(p.HostPath)
	if seen.rev == rev && statErr == nil && fi.Size() == seen.size && fi.ModTime().Equal(seen.mod) {
		return false, nil
	}
	f, err := read(p)
	if err != nil {
		return false, err
	}
	rows, rowsRev, err := s.st.Pins(ctx, p.Name)
	if err != nil {
		return false, err
	}
	stored := make(map[string]store.Pin, len(rows))
	for _, r := range rows {
		if r.Entry, err = canonical(r.Entry); err != nil {
			return false, fmt.Errorf("pins: plugin %q: the store's %s: %w", p.Name, r.Key, err)
		}
		stored[r.Key] = r
	}
	keys := map[string]bool{}
	for k := range f.Tools {
		keys[k] = true
	}
	for k := range stored {
		keys[k] = true
	}
	for k := range seen.keys {
		keys[k] = true
	}
	toFile := map[string]change{}
	var errs []error
	// push writes the file's entry of k to the store over version; another
	// replica's write meanwhile wins (the next Sync takes it).
	push := func(k string, inFile []byte, version int64) {
		v, err := s.st.PutPin(ctx, p.Name, k, inFile, version)
		switch {
		case errors.Is(err, store.ErrPinChanged):
		case err != nil:
			errs = append(errs, err)
		default:
			seen.keys[k] = seenPin{inFile, v}
		}
	}
	for _, k := range sortedKeys(keys) {
		inFile, err := marshalEntry(f.Tools[k])
		if err != nil {
			return false, err
		}
		last := seen.keys[k]
		st := stored[k]
		switch {
		case st.Version != last.version && !bytes.Equal(inFile, last.entry) && approves(f.Tools[k], st.Entry):
			// Changed in both, the file by approving the change the store
			// holds pending (seen here first, or by another replica):
			// the approval wins.
			push(k, inFile, st.Version)
		case st.Version != last.version:
			// Changed in the store (or first seen): the store's wins.
			if !bytes.Equal(inFile, st.Entry) {
				toFile[k] = change{was: inFile, entry: st.Entry}
			}
			seen.keys[k] = seenPin{st.Entry, st.Version}
		case !bytes.Equal(inFile, last.entry):
			// Changed in the file only: to the store, unless another
			// replica wrote it meanwhile (then the next Sync takes
			// theirs).
			push(k, inFile, last.version)
		}
		if seen.keys[k].entry == nil && seen.keys[k].version == 0 {
			delete(seen.keys, k)
		}
	}
	seen.rev = rowsRev
	if len(toFile) > 0 {
		// Applied to the file as it is now: what the plugin wrote since
		// it was read stays, and reaches the store at the next Sync.
		cur, err := read(p)
		if err != nil {
			// What was seen of the store is not in the file: forgotten,
			// so the next Sync takes the store's again rather than push
			// the file's back.
			delete(s.seen, p.Name)
			return false, err
		}
		for k, c := range toFile {
			if now, _ := marshalEntry(cur.Tools[k]); !bytes.Equal(now, c.was) {
				// Changed in the file since it was read (an approval,
				// say): merged again at the next Sync, not overwritten.
				delete(seen.keys, k)
				continue
			}
			if c.entry == nil {
				delete(cur.Tools, k)
				continue
			}
			var e policies.PinEntry
			if err := json.Unmarshal(c.entry, &e); err != nil {
				delete(s.seen, p.Name)
				return false, fmt.Errorf("pins: plugin %q: the store's %s: %w", p.Name, k, err)
			}
			cur.Tools[k] = &e
		}
		if err := policies.WritePinFile(p.HostPath, cur); err != nil {
			delete(s.seen, p.Name)
			return false, &FileError{Plugin: p.Name, Path: p.HostPath, Write: true, Err: err}
		}
	}
	// The file as stated before it was read, so that a write by the
	// plugin since is read next time; after a write of ours, or an error,
	// everything is read again next time.
	seen.size, seen.mod = -1, time.Time{}
	if statErr == nil && len(toFile) == 0 {
		seen.size, seen.mod = fi.Size(), fi.ModTime()
	}
	if len(errs) > 0 {
		seen.rev = -1
	}
	return len(toFile) > 0, errors.Join(errs...)
}

// change is a store entry to write to a pin file (nil: delete), if the
// file still holds was.
type change struct{ was, entry []byte }

// approves reports whether file approves the change that the stored entry
// holds pending: it pins that definition, with nothing pending.
func approves(file *policies.PinEntry, stored []byte) bool {
	var st policies.PinEntry
	if file == nil || stored == nil || json.Unmarshal(stored, &st) != nil {
		return false
	}
	return file.Pending == nil && st.Pending != nil && file.SHA256 == st.Pending.SHA256
}

// marshalEntry is e's JSON as Sync compares it; nil for no entry.
func marshalEntry(e *policies.PinEntry) ([]byte, error) {
	if e == nil {
		return nil, nil
	}
	return json.Marshal(e)
}

// canonical is entry as Sync compares it: a PinEntry's JSON as
// json.Marshal writes it.
func canonical(entry []byte) ([]byte, error) {
	var e policies.PinEntry
	if err := json.Unmarshal(entry, &e); err != nil {
		return nil, err
	}
	return json.Marshal(&e)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

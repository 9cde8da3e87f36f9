package policies

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
)

// DefaultPinFile is where builtin:pin keeps its pins, as the plugin sees
// it: the operator grants the directory with allowed_paths = { "./pins" =
// "/pins" }.
const DefaultPinFile = "/pins/pins.json"

// pin is builtin:pin: trust on first use for tool definitions. The first
// time it sees a tool it pins its definition; a tool whose definition later
// differs is hidden and its calls refused until an operator approves the
// change with `mcphost pins approve`. Configuration:
//
//	file = "/pins/pins.json"   # the pin file, as a path inside the plugin
//
// The plugin needs the file's directory granted, writable:
//
//	allowed_paths = { "./pins" = "/pins" }
type pin struct {
	refusal
	file string
	now  func() time.Time

	cached     *PinFile
	cachedSize int64
	cachedTime time.Time
	defs       map[[32]byte]pinnedDef // by the sum of the tool's JSON as given
}

type pinnedDef struct {
	def json.RawMessage
	sum string
}

// maxDefCache bounds the per-instance cache of canonical definitions.
const maxDefCache = 4096

// definition is PinDefinition, cached per instance by the tool's JSON as
// it arrived: canonicalising every schema on every listing is the
// policy's main cost.
func (p *pin) definition(t *abi.Tool) (json.RawMessage, string, error) {
	raw, err := json.Marshal(pinDefinition{Tool: t.Tool, Title: t.Title, Description: t.Description,
		InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations})
	if err != nil {
		return nil, "", err
	}
	k := sha256.Sum256(raw)
	if d, ok := p.defs[k]; ok {
		return d.def, d.sum, nil
	}
	def, sum, err := PinDefinition(t)
	if err != nil {
		return nil, "", err
	}
	if p.defs == nil || len(p.defs) >= maxDefCache {
		p.defs = map[[32]byte]pinnedDef{}
	}
	p.defs[k] = pinnedDef{def, sum}
	return def, sum, nil
}

func newPin() pdk.Policy {
	p := &pin{now: time.Now}
	return pdk.Policy{
		Name:      "pin",
		Version:   Version,
		Configure: p.configure,
		ToolsList: p.toolsList,
		ToolCall:  p.toolCall,
	}
}

func (p *pin) configure(cfg pdk.ConfigSource) error {
	if err := p.refusal.configure(cfg); err != nil {
		return err
	}
	p.file = cfg.String("file", DefaultPinFile)
	if p.file == "" {
		p.file = DefaultPinFile
	}
	// Fail at load time when the grant is missing or read-only, not at the
	// first listing.
	if _, err := p.read(); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p.file), ".pins-check-*.tmp")
	if err != nil {
		return fmt.Errorf("pin file %s: its directory is not writable: %v (%s)", p.file, err, grantHint)
	}
	tmp.Close()
	os.Remove(tmp.Name())
	return nil
}

const grantHint = `builtin:pin needs its directory granted, writable, like allowed_paths = { "./pins" = "/pins" }`

// read returns the pin file. An instance keeps the file it parsed last
// and parses again only when the file's size or modification time
// changed, so a call costs a stat. The result must not be modified.
func (p *pin) read() (*PinFile, error) {
	fi, err := os.Stat(p.file)
	if err == nil && p.cached != nil && fi.Size() == p.cachedSize && fi.ModTime().Equal(p.cachedTime) {
		return p.cached, nil
	}
	f, err := ReadPinFile(p.file)
	if err != nil {
		return nil, fmt.Errorf("reading pin file %s: %v (%s)", p.file, err, grantHint)
	}
	p.cached = nil
	if fi != nil {
		p.cached, p.cachedSize, p.cachedTime = f, fi.Size(), fi.ModTime()
	}
	return f, nil
}

// readFresh returns the pin file as it is now, to modify.
func (p *pin) readFresh() (*PinFile, error) {
	p.cached = nil
	return p.read()
}

// pinOp is one change to the pin file, applied to the file as read when
// deciding and again to the file as it is just before writing, so that
// changes made meanwhile (an approval, another instance's pins) survive.
type pinOp func(f *PinFile)

func (p *pin) toolsList(in *abi.ToolsListInput) (*abi.ToolsListOutput, error) {
	f, err := p.read()
	if err != nil {
		return nil, err
	}
	now := p.now().UTC().Format(time.RFC3339)
	var ops []pinOp
	out := &abi.ToolsListOutput{Tools: make([]abi.Tool, 0, len(in.Tools))}
	for _, t := range in.Tools {
		def, sum, err := p.definition(&t)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", t.Name, err)
		}
		key := PinKey(t.Server, t.Tool)
		e := f.Tools[key]
		switch {
		case e == nil:
			entry := PinEntry{Server: t.Server, Tool: t.Tool, SHA256: sum, Definition: def, PinnedAt: now}
			ops = append(ops, func(f *PinFile) {
				if f.Tools[key] == nil {
					e := entry
					f.Tools[key] = &e
				}
			})
			logf(pdk.LevelInfo, "pinned %s (%s) at sha256 %s", key, t.Name, sum[:12])
		case e.SHA256 == sum:
			if e.Pending != nil {
				ops = append(ops, func(f *PinFile) {
					if e := f.Tools[key]; e != nil && e.SHA256 == sum {
						e.Pending = nil
					}
				})
				logf(pdk.LevelInfo, "%s is back to its pinned definition; the pending change is dropped", key)
			}
		case e.Pending != nil && e.Pending.SHA256 == sum:
			continue // hidden; logged when first seen
		default:
			change := PinChange{SHA256: sum, Definition: def, SeenAt: now}
			old := e.SHA256
			ops = append(ops, func(f *PinFile) {
				if e := f.Tools[key]; e != nil && e.SHA256 == old {
					c := change
					e.Pending = &c
				}
			})
			logf(pdk.LevelWarn, "definition of %s (%s) changed since it was pinned: hidden until approved with `mcphost pins approve CONFIG %s`\n%s",
				key, t.Name, key, PinDiff(e.Definition, def))
			continue
		}
		out.Tools = append(out.Tools, t)
	}
	if len(ops) > 0 {
		cur, err := p.readFresh()
		if err != nil {
			return nil, err
		}
		p.cached = nil // about to change
		for _, op := range ops {
			op(cur)
		}
		if err := WritePinFile(p.file, cur); err != nil {
			return nil, fmt.Errorf("writing pin file %s: %v (%s)", p.file, err, grantHint)
		}
	}
	return out, nil
}

func (p *pin) toolCall(in *abi.ToolCallInput) (*abi.CallDecision, error) {
	f, err := p.read()
	if err != nil {
		return nil, err
	}
	key := PinKey(in.Server, in.Tool)
	switch e := f.Tools[key]; {
	case e == nil:
		return p.refuseCall("%s has not been pinned yet: list the tools first", in.Name), nil
	case e.Pending != nil:
		return p.refuseCall("the definition of %s changed since it was pinned; an operator must approve it (mcphost pins approve CONFIG %s)", in.Name, key), nil
	}
	return pdk.Allow(), nil
}

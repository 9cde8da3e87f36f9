package policies

import (
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
	file string
	now  func() time.Time
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

func (p *pin) read() (*PinFile, error) {
	f, err := ReadPinFile(p.file)
	if err != nil {
		return nil, fmt.Errorf("reading pin file %s: %v (%s)", p.file, err, grantHint)
	}
	return f, nil
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
		def, sum, err := PinDefinition(&t)
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
		cur, err := p.read()
		if err != nil {
			return nil, err
		}
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
		return pdk.Denyf("%s has not been pinned yet: list the tools first", in.Name), nil
	case e.Pending != nil:
		return pdk.Denyf("the definition of %s changed since it was pinned; an operator must approve it (mcphost pins approve CONFIG %s)", in.Name, key), nil
	}
	return pdk.Allow(), nil
}

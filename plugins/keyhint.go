package plugins

import (
	"context"
	"errors"
	"maps"
	"strings"

	"github.com/mcphost-project/mcphost/abi"
)

// misspeltKey looks behind a describe that failed for a plugin given
// configuration keys: a misspelt key often leaves a required one unset, and
// the error then names the consequence ("set at least one of ...") rather
// than the cause. A fresh instance, told abi.ConfigDescribeKeys, answers the
// keys its configuration reads (a PDK plugin does; others fail again), and
// a key it does not read becomes the error, with the nearest it does. It
// returns nil when it finds nothing better to say.
func (p *Plugin) misspeltKey(ctx context.Context) error {
	given := false
	for k := range p.spec.Config {
		given = given || !strings.HasPrefix(k, abi.ConfigKeyPrefix)
	}
	if !given {
		return nil
	}
	// No other instance of p runs while it loads, so swapping the
	// environment the new instance's kernel reads is safe.
	env := *p.env
	env.Config = maps.Clone(env.Config)
	env.Config[abi.ConfigDescribeKeys] = "1"
	saved := p.env
	p.env = &env
	in, err := p.newInstance(ctx)
	p.env = saved
	if err != nil {
		return nil
	}
	out, keep, err := p.callInstance(ctx, in, "describe", abi.ExportDescribe, nil)
	if keep {
		in.close()
	}
	if err != nil {
		return nil
	}
	desc, err := decodeDescribe(out, func(string) bool { return true })
	if err != nil {
		return nil
	}
	var ke *ConfigKeyError
	if err := checkConfigKeys(p.spec.Config, desc.ConfigKeys); errors.As(err, &ke) {
		return err
	}
	return nil
}

package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcphost-project/mcphost/host/telemetry"
)

// tracesSchema is the traces block: OpenTelemetry traces over OTLP/HTTP.
var tracesSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "otlp_endpoint", Required: true},
		{Name: "headers"},
		{Name: "sample_ratio"},
		{Name: "service_name"},
	},
}

// decodeTraces decodes the traces block; mcphost traces nothing without
// one.
func (d *decoder) decodeTraces(block *hcl.Block) *telemetry.Config {
	content, diags := block.Body.Content(tracesSchema)
	d.diags = append(d.diags, diags...)
	attrs := content.Attributes
	c := &telemetry.Config{}
	if a := attrs["otlp_endpoint"]; a != nil {
		if v, ok := d.string(a); ok {
			c.Endpoint = v
			if err := (telemetry.Config{Endpoint: v}).Check(); err != nil {
				d.errorf(a.Expr.Range(), "Invalid otlp_endpoint", "%s.", err)
			}
		}
	}
	if v, ok := d.stringMap(attrs["headers"]); ok {
		c.Headers = v
	}
	if a := attrs["sample_ratio"]; a != nil {
		if val, ok := d.eval(a); ok {
			if val, ok = d.convert(a, val, cty.Number, "a number from 0 to 1"); ok {
				f, _ := val.AsBigFloat().Float64()
				if f <= 0 || f > 1 {
					d.errorf(a.Expr.Range(), "Invalid sample_ratio", "sample_ratio is the share of traces kept: more than 0, at most 1 (got %s).", fmt.Sprint(f))
				}
				c.SampleRatio = f
			}
		}
	}
	if v, ok := d.string(attrs["service_name"]); ok {
		c.ServiceName = v
	}
	return c
}

package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcphost-project/mcphost/host/quota"
)

// quotaSchema is a quota block: who and which calls it counts, and how
// many it lets through.
var quotaSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "subjects"},
		{Name: "groups"},
		{Name: "servers"},
		{Name: "tools"},
		{Name: "calls"},
		{Name: "window"},
		{Name: "concurrent"},
		{Name: "per"},
	},
}

// quotaRef is a server a quota names, checked once every server is known.
type quotaRef struct {
	quota, server string
	rng           hcl.Range
}

// decodeQuota decodes a quota block; its problems are reported at the
// argument they are about (quota.Quota.Check, which the admin API's
// quotas pass too).
func (d *decoder) decodeQuota(block *hcl.Block) (quota.Quota, []quotaRef) {
	content, diags := block.Body.Content(quotaSchema)
	d.diags = append(d.diags, diags...)
	attrs := content.Attributes
	q := quota.Quota{Name: block.Labels[0]}
	var refs []quotaRef
	if v, _, ok := d.stringList(attrs["subjects"]); ok {
		q.Subjects = v
	}
	if v, _, ok := d.stringList(attrs["groups"]); ok {
		q.Groups = v
	}
	if v, ranges, ok := d.stringList(attrs["servers"]); ok {
		q.Servers = v
		for i, s := range v {
			refs = append(refs, quotaRef{quota: q.Name, server: s, rng: ranges[i]})
		}
	}
	if v, _, ok := d.stringList(attrs["tools"]); ok {
		q.Tools = v
	}
	if n, ok := d.int(attrs["calls"], 1, quota.MaxCalls); ok {
		q.Calls = int(n)
	}
	if v, ok := d.duration(attrs["window"], false); ok {
		q.Window = v
	}
	if n, ok := d.int(attrs["concurrent"], 1, quota.MaxConcurrent); ok {
		q.Concurrent = int(n)
	}
	if v, ok := d.enum(attrs["per"], quota.PerSubject, quota.PerQuota); ok {
		q.Per = v
	}
	// A limit misspelt or refused where it was read is already reported:
	// the checks that need it would only repeat that.
	limitsUnsure := d.reported(attrs["calls"]) || d.reported(attrs["concurrent"]) ||
		attrs["calls"] == nil && misspelled(block, quotaSchema, "calls") ||
		attrs["concurrent"] == nil && misspelled(block, quotaSchema, "concurrent")
	for _, p := range q.Check() {
		if p.Field == "name" {
			d.errorf(block.LabelRanges[0], "Invalid quota name", "%s.", p.Detail)
			continue
		}
		a := attrs[p.Field]
		if d.reported(a) || limitsUnsure && (p.Field == "calls" || p.Field == "window") {
			continue
		}
		d.errorf(rangeOr(a, block.DefRange), fmt.Sprintf("Invalid quota %q", q.Name), "%s.", p.Detail)
	}
	return q, refs
}

// checkQuotaServers warns of a quota's server that no block declares: it
// may be one added at run time through the admin API, or a typo.
func (d *decoder) checkQuotaServers(refs []quotaRef, servers *nameSet) {
	for _, ref := range refs {
		if !servers.has(ref.server) {
			d.warnf(ref.rng, "Unknown server in quota",
				"Quota %q counts calls to server %q, but no server block has that name.%s It applies only if a server of that name is added through the admin API.",
				ref.quota, ref.server, didYouMean(ref.server, servers.names))
		}
	}
}

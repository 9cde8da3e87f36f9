package admin

import (
	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/engine"
	"github.com/mcphost-project/mcphost/host/store"
)

// quotaAPI serves /v1/quotas (namedspecs.go).
var quotaAPI = namedAPI[config.QuotaSpec, engine.QuotaInfo]{
	noun: "quota", title: "Quota", plural: "quotas",
	none: store.ErrNoQuota, inConfig: engine.ErrConfigQuota,
	decode:  config.DecodeQuotaSpec,
	version: func(info engine.QuotaInfo) int64 { return info.Version },
	engine:  namedEngine[config.QuotaSpec, engine.QuotaInfo]{(*engine.Engine).Quotas, (*engine.Engine).Quota, (*engine.Engine).PutQuota, (*engine.Engine).DeleteQuota},
}

package config

import "github.com/hashicorp/hcl/v2"

// The schemas are the public contract of the config language: every block and
// argument the operator may write. hclsyntax rejects anything else and
// suggests the nearest name from these lists.

var rootSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "listen"},
		{Type: "server", LabelNames: []string{"name"}},
		{Type: "tools"},
		{Type: "plugin", LabelNames: []string{"name"}},
		{Type: "tools_plugin", LabelNames: []string{"name"}},
		{Type: "runtime"},
		{Type: "resources"},
		{Type: "admin"},
		{Type: "store"},
		{Type: "grants"},
		{Type: "audit"},
		{Type: "traces"},
		{Type: "tasks"},
		{Type: "quota", LabelNames: []string{"name"}},
		{Type: "toolset", LabelNames: []string{"name"}},
	},
}

var auditSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "file"},
		{Name: "max_size"},
		{Name: "max_files"},
		{Name: "arguments"},
		{Name: "results"},
		{Name: "listings"},
		{Name: "redact"},
		{Name: "retention"},
		{Name: "max_rows"},
	},
}

var grantsSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "file"},
		{Name: "key"},
	},
}

var adminSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "http", Required: true},
		{Name: "max_connections"},
	},
}

var storeSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "sqlite"},
		{Name: "postgres"},
		{Name: "key"},
		{Name: "poll"},
	},
}

var listenSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "http"},
		{Name: "auth_token"},
		{Name: "session_timeout"},
		{Name: "max_body"},
		{Name: "read_timeout"},
		{Name: "write_timeout"},
		{Name: "idle_timeout"},
		{Name: "max_connections"},
		{Name: "max_sessions"},
		{Name: "max_streams_per_caller"},
		{Name: "max_sessions_per_caller"},
		{Name: "drain_timeout"},
		{Name: "allowed_origins"},
		{Name: "tls_cert"},
		{Name: "tls_key"},
	},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "auth"},
	},
}

var authSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "admin_groups"},
		{Name: "stdio_key"},
	},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "key", LabelNames: []string{"name"}},
		{Type: "oauth"},
	},
}

var keySchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "sha256"},
		{Name: "value"},
		{Name: "subject"},
		{Name: "groups"},
		{Name: "attributes"},
	},
}

var oauthSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "issuer", Required: true},
		{Name: "audience", Required: true},
		{Name: "scopes"},
		{Name: "subject_claim"},
		{Name: "groups_claim"},
		{Name: "attributes"},
		{Name: "jwks_url"},
		{Name: "clock_skew"},
		{Name: "algorithms"},
	},
}

var serverSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "transport"},
		{Name: "command"},
		{Name: "args"},
		{Name: "env"},
		{Name: "cwd"},
		{Name: "url"},
		{Name: "headers"},
		{Name: "timeout"},
		{Name: "idle_timeout"},
		{Name: "connect_timeout"},
		{Name: "sessions"},
		{Name: "protocol_version"},
		{Name: "max_sessions"},
	},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "oauth"},
	},
}

var upstreamOAuthSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "grant"},
		{Name: "client_id"},
		{Name: "client_secret"},
		{Name: "client_assertion_key"},
		{Name: "client_assertion_alg"},
		{Name: "issuer"},
		{Name: "audience"},
		{Name: "mode"},
		{Name: "scopes"},
		{Name: "redirect_url"},
		{Name: "client_metadata_url"},
	},
}

var resourcesSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "conflict"},
	},
}

var toolsSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "separator"},
		{Name: "max_name_length"},
		{Name: "prefix"},
		{Name: "exposure"},
		{Name: "always"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "code"}},
}

var pluginSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "source"}, // required; checked in decodePlugin to avoid reporting a misspelling twice
		{Name: "sha256"},
		{Name: "servers"},
		{Name: "callers"},
		{Name: "groups"},
		{Name: "config"},
		{Name: "timeout"},
		{Name: "memory"},
		{Name: "on_error"},
		{Name: "allowed_hosts"},
		{Name: "allowed_paths"},
		{Name: "env"},
		{Name: "instances"},
	},
}

var toolsPluginSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "source"}, // required; checked in decodePluginWith
		{Name: "sha256"},
		{Name: "config"},
		{Name: "timeout"},
		{Name: "memory"},
		{Name: "instances"},
		{Name: "allowed_hosts"},
		{Name: "allowed_paths"},
		{Name: "env"},
		{Name: "kv"},
		{Name: "progress"},
		{Name: "client_log"},
	},
}

var runtimeSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "cache_dir"},
		{Name: "watch"},
		{Name: "watch_settle"},
	},
}

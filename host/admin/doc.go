// Package admin serves mcphost's admin API: JSON over HTTP under /v1 for
// managing servers at run time, described by the OpenAPI document it
// serves at /openapi.json. See docs/admin-api.md.
package admin

import _ "embed"

// OpenAPI is the API's OpenAPI document.
//
//go:embed openapi.json
var OpenAPI []byte

# Every block and argument of the config language, with valid values.
listen {
  http            = "127.0.0.1:7700"
  auth_token      = env("MCPHOST_TEST_TOKEN")
  session_timeout = "45m"
  max_body        = "8MiB"
}

server "files" {
  transport        = "stdio"
  command          = "npx"
  args             = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"]
  env              = { DEBUG = "1", LEVEL = 3 }
  cwd              = "work"
  timeout          = "90s"
  idle_timeout     = "0"
  connect_timeout  = "10s"
  sessions         = "per_client"
  protocol_version = "2025-06-18"
}

server "remote" {
  transport = "http"
  url       = "https://mcp.example.com/mcp"
  headers = {
    Authorization = "Bearer ${env("MCPHOST_TEST_REMOTE", "fallback")}"
    X-Token       = file("token.txt")
  }
  idle_timeout = "5m"
}

server "events" {
  transport = "sse"
  url       = "http://localhost:9000/sse"
}

tools {
  separator       = "_"
  max_name_length = 100
  prefix          = "never"
}

plugin "no-destructive" {
  source  = "./policies/no-destructive.wasm"
  sha256  = "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"
  servers = ["files", "remote"]
  config = {
    mode   = "plan"
    limit  = 2000
    ratio  = 0.5
    strict = true
    tags   = ["a", "b"]
    nested = { deep = [1, null] }
    none   = null
  }
  timeout       = "250ms"
  memory        = "16MiB"
  on_error      = "skip"
  allowed_hosts = ["api.example.com"]
  allowed_paths = { "./data" = "/data", "ro:/etc/ssl" = "/ssl" }
  env           = { TZ = "UTC" }
}

plugin "audit" {
  source = "builtin:audit"
}

runtime {
  cache_dir    = ".cache"
  watch        = false
  watch_settle = "2s"
}

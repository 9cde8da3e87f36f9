# Values that parse but are not allowed.
listen {
  http            = "localhost"
  session_timeout = "30 minutes"
  max_body        = "4 megs"
}

server "files" {
  transport        = "stido"
  command          = "npx"
  timeout          = "0"
  idle_timeout     = "-5m"
  connect_timeout  = 30
  sessions         = "per-client"
  protocol_version = "latest"
}

server "bad url" {
  transport = "sse"
  url       = "ftp://example.com/sse"
}

server "hostless" {
  transport = "streamable-http"
  url       = "https:///mcp"
}

tools {
  separator       = "::"
  max_name_length = 0
  prefix          = "sometimes"
}

runtime {
  watch = "yes please"
}

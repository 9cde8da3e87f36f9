# Each transport needs its own arguments and refuses the other kind's.
server "no-command" {
  transport = "stdio"
  args      = ["--flag"]
}

server "no-url" {
  transport = "streamable-http"
}

server "sse-no-url" {
  transport = "sse"
}

server "url-on-stdio" {
  transport = "stdio"
  command   = "npx"
  url       = "https://mcp.example.com/mcp"
  headers   = { A = "b" }
}

server "command-on-http" {
  transport = "http"
  url       = "https://mcp.example.com/mcp"
  command   = "npx"
  cwd       = "/srv"
}

server "forgot-transport" {
  url = "https://mcp.example.com/mcp"
}

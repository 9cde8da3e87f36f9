# env() of an unset variable names it and says how to fix it.
listen {
  auth_token = env("MCPHOST_TEST_UNSET")
}

server "remote" {
  transport = "streamable-http"
  url       = "https://mcp.example.com/mcp"
  headers   = { Authorization = "Bearer ${env("MCPHOST_TEST_UNSET")}" }
}

server "ok" {
  command = env("MCPHOST_TEST_SET")
  args    = [env("MCPHOST_TEST_UNSET", "default"), env("")]
  cwd     = file("no-such-file.txt")
}

# What mcphost run would refuse at start (host.Config.Validate) is
# reported here too, at the server's block: validate and run agree. A
# server with an error of its own is not checked again by the host.
listen {
  auth {
    oauth {
      issuer   = "https://idp.example.com"
      audience = "https://mcp.example.com/mcp"
    }
  }
}

server "shared" {
  transport = "streamable-http"
  url       = "https://a.example.com/mcp"
  sessions  = "shared"
  oauth {
    grant         = "token_exchange"
    issuer        = "https://idp.example.com"
    client_id     = "mcphost"
    client_secret = "s"
  }
}

server "elsewhere" {
  transport = "streamable-http"
  url       = "https://b.example.com/mcp"
  oauth {
    grant         = "token_exchange"
    issuer        = "https://other.example.com"
    client_id     = "mcphost"
    client_secret = "s"
  }
}

server "broken" {
  transport = "streamable-http"
  url       = "https://c.example.com/mcp"
  sessions  = "shared"
  oauth {
    grant         = "token_exchange"
    issuer        = "https://other.example.com"
    client_id     = "mcphost"
    client_secret = env("MCPHOST_TEST_UNSET")
  }
}

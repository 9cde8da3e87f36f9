# An error is reported once, at its cause, not again at what depends on it:
# a key block with an error still counts for stdio_key, and an attribute
# whose env() is unset still counts as set. Independent mistakes in one
# block are each reported. An audit file whose env() is unset is not also
# an audit log going nowhere.
listen {
  auth {
    stdio_key = "ci-bot"
    key "ci-bot" {
      sha256  = "3f1b"
      subject = "ci-bot"
    }
    key "twice-wrong" {
      sha256 = "3f1b"
    }
    key "env-subject" {
      value   = "0123456789abcdef0123"
      subject = env("MCPHOST_TEST_UNSET")
    }
  }
}

server "jira" {
  transport = "streamable-http"
  url       = "https://jira.example.com/mcp"
  oauth {
    grant         = "token_exchange"
    issuer        = env("MCPHOST_TEST_UNSET")
    client_id     = "mcphost"
    client_secret = env("MCPHOST_TEST_UNSET")
  }
}

server "m2m" {
  transport = "streamable-http"
  url       = "https://m2m.example.com/mcp"
  oauth {
    grant     = "client_credentials"
    client_id = env("MCPHOST_TEST_UNSET")
  }
}

audit {
  file = env("MCPHOST_TEST_UNSET")
}

# A listen.auth_token or tls_cert whose env() is unset is reported there
# alone: not again as a listener without a token, an admin API without
# credentials or half a TLS pair.
listen {
  http       = "0.0.0.0:7700"
  auth_token = env("MCPHOST_TEST_UNSET")
  tls_cert   = env("MCPHOST_TEST_UNSET")
  tls_key    = "key.pem"
}

admin {
  http = "127.0.0.1:7701"
}

server "a" {
  command = "x"
}

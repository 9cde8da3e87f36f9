server "s" {
  command = "true"
}

plugin "fetch" {
  source        = "builtin:audit"
  allowed_hosts = ["api.example.com", "https://api.example.com/v1", "10.0.0.5:99999", "*.example.com:8443", "[::1]:3000", "user@host"]
}

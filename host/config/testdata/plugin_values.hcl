# Plugin mistakes: scope, digest, memory, on_error, source.
server "files" {
  command = "npx"
}

plugin "scoped" {
  source   = "builtin:audit"
  servers  = ["files", "fils", "other"]
  on_error = "allow"
  timeout  = "fast"
}

plugin "digest" {
  source = "./policies/missing.wasm"
  sha256 = "abc123"
  memory = "4MiB"
}

plugin "hexless" {
  source = "policies/empty.wasm"
  sha256 = "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"
  memory = "64 pages"
}

plugin "remote" {
  source = "https://example.com/p.wasm"
  memory = "8GiB"
  config = "mode=plan"
}

plugin "nosource" {
  allowed_hosts = [""]
}

plugin "builtin-digest" {
  source = "builtin:audit"
  sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
}

plugin "dir" {
  source = "policies"
}

plugin "unnamed-builtin" {
  source        = "builtin:"
  allowed_paths = { "" = "/data" }
}

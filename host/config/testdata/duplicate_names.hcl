# Server and plugin names must be unique; singleton blocks appear once.
server "files" {
  command = "a"
}

server "files" {
  command = "b"
}

plugin "audit" {
  source = "builtin:audit"
}

plugin "audit" {
  source = "builtin:audit"
}

tools {
  prefix = "always"
}

tools {
  prefix = "never"
}

# A number out of range does not stop decoding: the other mistakes are
# reported in the same run, and the attribute that holds the number gets
# no second error (no "Missing command" for server "b").
listen {
  http         = "${1e9999999}"
  max_sessions = 1e-9999
}

server "a" {
  comand = "x"
}

server "b" {
  command = "${1e9999999}"
}

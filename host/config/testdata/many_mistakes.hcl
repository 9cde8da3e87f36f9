# Several mistakes at once: all of them are reported in one run.
listen {
  http     = "0.0.0.0:7700"
  max_body = "lots"
}

server "files" {
  comand  = "npx"
  timeout = "1 minute"
}

server "files" {
  transport = "websocket"
}

plugin "p" {
  source   = "builtin:p"
  servers  = ["nope"]
  memory   = "1MiB"
  on_error = "ignore"
}

tool {
  prefix = "always"
}

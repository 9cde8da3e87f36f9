# Misspelled blocks and arguments get the nearest valid name.
listen {
  htp = "127.0.0.1:7700"
}

servr "files" {
  command = "npx"
}

server "files" {
  comand = "npx"
}

plugin "p" {
  source   = "builtin:audit"
  on_eror  = "skip"
}

tools {
  prefx = "always"
}

runtime {
  cache = "x"
}

plugin "typo-source" {
  sorce = "builtin:audit"
}

server "typo-url" {
  transport = "sse"
  ulr       = "https://mcp.example.com/sse"
}

server "files" {
  command = "mcp-files"
}

quota "misspelt" {
  cals   = 60
  window = "1m"
}

quota "empty" {
  subjects = ["alice"]
}

quota "bad values" {
  calls      = 0
  window     = "500ms"
  concurrent = 2.5
  per        = "tool"
}

quota "window-alone" {
  concurrent = 2
  window     = "1m"
  servers    = ["file"]
  tools      = [""]
}

quota "empty" {
  calls = 1
}

# Mistakes in an audit block: a destination missing, values out of range,
# a redact plugin that does not exist, and retention without a store.
server "files" {
  command = "files-server"
}

plugin "redactor" {
  source = "builtin:redact"
}

audit {
  max_size  = "10B"
  max_files = 0
  arguments = "yes"
  redact    = "redacter"
  retention = "1 week"
  max_rows  = 100
}

# A syntax error stops decoding, so later mistakes are not guessed at.
server "files" {
  command = "npx
}

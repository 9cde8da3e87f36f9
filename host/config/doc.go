// Package config decodes the operator's HCL config file into the Go values
// the host and the plugin engine take: host.Config, []plugins.Spec and
// Runtime.
//
// The file is decoded against an explicit schema (schema.go). Every mistake
// becomes an HCL diagnostic with a source range, a summary and a detail that
// says the fix, and all of them are reported in one pass, in file order;
// Diagnostics.WriteText prints them with HCL's own writer.
//
// Choices a reader might question:
//
//   - An argument the server's transport would ignore (url on a stdio
//     server, command on an http one) is an error, not a warning: it almost
//     always means a forgotten or wrong transport line.
//   - null means "not set", so an argument can be switched off without
//     deleting the line.
//   - Relative paths (plugin source, cwd, cache_dir, allowed_paths, file())
//     are resolved against the config file's directory, never the working
//     directory, so a config means the same wherever mcphost is started.
//     command is left alone: it is looked up on PATH like in a shell.
//   - Zero durations are refused except idle_timeout, where "0" means never;
//     elsewhere a zero would silently select the default.
//   - Plugin files are checked to exist at decode time, where the mistake
//     still has a line number.
//   - Expressions may call env("NAME"), env("NAME", "default") and
//     file("path") (trailing newlines dropped, like $(cat path)); there are
//     no variables.
package config

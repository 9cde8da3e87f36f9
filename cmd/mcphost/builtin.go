package main

// builtinPolicy resolves "builtin:NAME" plugin sources. It is nil until the
// built-in policies are compiled in.
var builtinPolicy func(name string) ([]byte, map[string]string, bool)

package process

import "time"

// stdioGrace is how long an upstream process has to exit on its own once its
// stdin is closed, before it is signalled (SIGTERM, then as long again
// before SIGKILL). Many servers never exit when stdin closes, and a stdio
// client that closes mcphost's stdin kills it soon after (the Python SDK
// after 2 s): shutdown must be done by then, or the upstream's children
// outlive it.
const Grace = 400 * time.Millisecond

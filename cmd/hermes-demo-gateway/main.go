// Command hermes-demo-gateway is the built-in demo gateway as a program of
// its own: `hermes-supervisor run --demo` runs it when it sits beside the
// supervisor's executable, and else `hermes-supervisor demo-gateway`. A
// gateway is a program apart from its supervisor (Hermes' is Python), and
// this one starts in a fraction of the supervisor's own start-up, without
// the service, CLI and config packages the supervisor links in.
package main

import (
	"os"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
)

func main() { os.Exit(demogateway.Main(os.Args[1:], os.Getenv, os.Stderr)) }

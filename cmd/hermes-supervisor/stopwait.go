package main

import (
	"fmt"
	"time"

	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

// waitHelp is the help of stop's and restart's --timeout.
func waitHelp(verb string) string {
	return "how long to wait for the " + verb + " to complete; 0 or unset: as long as the supervisor says its stop may take " +
		"(stop timeout + kill grace + 15s, longer while the gateway asks for more time; " + supervisor.DefaultStopWait.String() + " if it does not say)"
}

// checkWait refuses a negative --timeout of stop or restart.
func checkWait(timeout time.Duration) error {
	if timeout < 0 {
		return fmt.Errorf("--timeout must not be negative, got %s: pass a duration such as 2m, or leave it out to wait as long as the supervisor says its stop may take", timeout)
	}
	return nil
}

package ctlsock

import (
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

func shortTempDir(t *testing.T) string { return testdir.New(t) }

// Named pipes have no mode bits; their SDDL is what restricts them.
func checkPrivate(*testing.T, string) {}

// A named pipe vanishes with its last handle: nothing is left stale.
func leaveStaleEndpoint(*testing.T, string) {}

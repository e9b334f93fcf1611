//go:build !linux

package pidns

import (
	"errors"
	"os"
	"os/exec"
	"testing"
)

// Main runs the tests: only Linux has PID namespaces.
func Main(m *testing.M) { os.Exit(m.Run()) }

// Available reports false: only Linux has PID namespaces.
func Available() bool { return false }

// Why says why the namespace is not available.
func Why() string { return "PID namespaces exist only on Linux" }

// StartAt is unsupported outside Linux.
func StartAt(*exec.Cmd, int) error { return errors.ErrUnsupported }

//go:build !linux

package pidns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

func runMain(m *testing.M) { os.Exit(m.Run()) }

func available() bool { return false }

func whyNot() string { return "PID namespaces exist only on Linux" }

func startAt(*exec.Cmd, int) error { return errors.ErrUnsupported }

func bystander() {
	fmt.Fprintln(os.Stderr, "pidns: a bystander needs a PID namespace, which only Linux has")
	os.Exit(2)
}

func startBystander(*exec.Cmd, int) error { return errors.ErrUnsupported }

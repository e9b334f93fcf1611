//go:build unix

package procstate

import (
	"os"
	"syscall"
	"testing"
)

func stopProcess(t *testing.T, p *os.Process) {
	t.Helper()
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
}

//go:build unix

package signals

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestSignals(t *testing.T) {
	if s, ok := Restart(); !ok || s != unix.SIGUSR1 {
		t.Fatal("restart signal")
	}
	if s, ok := Reload(); !ok || s != unix.SIGHUP {
		t.Fatal("reload signal")
	}
	if s, ok := Terminate(); !ok || s != unix.SIGTERM {
		t.Fatal("terminate signal")
	}
	if len(Shutdown()) != 2 {
		t.Fatal("shutdown signals")
	}
}

package ctlsock

import (
	"strings"
	"testing"
)

// takenAddress creates the pipe of a home first, as any local user may
// (the pipe namespace is machine-wide), and keeps it until t ends.
func takenAddress(t *testing.T) string {
	t.Helper()
	addr := Address(shortTempDir(t))
	ln, err := Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return addr
}

// checkFresh requires a name nobody could have guessed: the taken one with
// a random suffix.
func checkFresh(t *testing.T, addr string) {
	t.Helper()
	if !strings.HasPrefix(addr, pipePrefix) || len(addr) < len(pipePrefix)+16+1+32 {
		t.Errorf("fresh pipe %q has no random suffix", addr)
	}
}

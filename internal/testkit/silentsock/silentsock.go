// Package silentsock stands in for a root daemon's socket that anyone may
// connect to and that never answers our protocol (journald's stdout
// socket, say): the target of a link an attacker plants where a client of
// ours would dial. It counts who connects, so that a test can say nobody
// did.
package silentsock

import (
	"net"
	"os"
	"sync/atomic"
	"testing"
)

// Listen listens at path, mode 0666, accepting every connection, saying
// nothing and holding it open until the test ends, and returns the count
// of connections accepted so far.
func Listen(t *testing.T, path string) *atomic.Int32 {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		t.Fatal(err)
	}
	heard := new(atomic.Int32)
	done := make(chan []net.Conn)
	go func() {
		var held []net.Conn
		for {
			c, err := ln.Accept()
			if err != nil {
				done <- held
				return
			}
			heard.Add(1)
			held = append(held, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for _, c := range <-done {
			c.Close()
		}
	})
	return heard
}

package ctlsock

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

func TestControlEndpoint(t *testing.T) {
	home := shortTempDir(t)
	addr := Address(home)
	if _, err := Dial(context.Background(), addr); !errors.Is(err, ErrNoEndpoint) {
		t.Fatalf("dial with no listener: %v", err)
	}
	ln, err := Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	checkPrivate(t, addr)
	if _, err := Listen(addr); !errors.Is(err, ErrEndpointInUse) {
		t.Fatalf("second listener: %v", err)
	}
	// The probe of the second Listen is also accepted here, so serve
	// every connection until the listener closes.
	go sayHi(ln)
	c, err := Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 3)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "hi\n" {
		t.Fatalf("read %q %v", buf, err)
	}
	c.Close()
	ln.Close()
	leaveStaleEndpoint(t, addr)
	ln2, err := Listen(addr)
	if err != nil {
		t.Fatalf("listen over a stale endpoint: %v", err)
	}
	ln2.Close()
}

// sayHi answers every connection to ln with "hi" and closes it, until ln
// closes.
func sayHi(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = c.Write([]byte("hi\n"))
		c.Close()
	}
}

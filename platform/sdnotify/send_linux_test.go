package sdnotify

import (
	"errors"
	"fmt"
	"net"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// Send reaches a socket by its path and an abstract one by "@name", and
// the receiver learns who sent it.
func TestSendReachesPathAndAbstractSockets(t *testing.T) {
	abstract, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: fmt.Sprintf("@hermes-supervisor-test-%d", os.Getpid()), Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer abstract.Close()
	l, _ := listenTest(t)
	for _, tc := range []struct {
		name, addr string
		read       func([]byte) (int, error)
	}{
		{"path", l.Addr(), func(b []byte) (int, error) {
			d, err := l.Receive(b)
			if err == nil && d.PID != os.Getpid() {
				err = fmt.Errorf("sender pid %d, want %d", d.PID, os.Getpid())
			}
			return d.N, err
		}},
		{"abstract", abstract.LocalAddr().String(), func(b []byte) (int, error) {
			n, _, err := abstract.ReadFromUnix(b)
			return n, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Send(tc.addr, "WATCHDOG=1"); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 64)
			n, err := tc.read(buf)
			if err != nil || string(buf[:n]) != "WATCHDOG=1" {
				t.Fatalf("received %q, %v", buf[:n], err)
			}
		})
	}
	if err := Send("/nonexistent/n", "READY=1"); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("Send to a missing socket = %v, want ENOENT", err)
	}
}

// A receiver that reads nothing fills its queue; Send then fails at once
// rather than block: the supervisor's own keep-alive to systemd is sent
// from its state machine's loop.
func TestSendToAFullQueueFailsAtOnce(t *testing.T) {
	l, _ := listenTest(t)
	var err error
	for i := 0; err == nil; i++ {
		if i > 100000 {
			t.Fatal("100 000 datagrams queued to a socket nobody reads")
		}
		err = Send(l.Addr(), "WATCHDOG=1")
	}
	if !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("Send to a full queue = %v, want EAGAIN", err)
	}
}

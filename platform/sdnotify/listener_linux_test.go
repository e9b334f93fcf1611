package sdnotify

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// listenTest opens a listener (see newTestListener) and a datagram socket
// connected to it.
func listenTest(t *testing.T) (l *Listener, client int) {
	t.Helper()
	l = newTestListener(t)
	var err error
	client, err = unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(client) })
	if err := unix.Connect(client, &unix.SockaddrUnix{Name: l.Addr()}); err != nil {
		t.Fatal(err)
	}
	return l, client
}

// The kernel names the sender, and a keep-alive, which Hermes sends twice
// per watchdog deadline for the gateway's whole life, is received without
// allocating.
func TestReceiveNamesTheSenderWithoutAllocating(t *testing.T) {
	l, client := listenTest(t)
	buf, msg := make([]byte, 64), []byte("WATCHDOG=1")
	var d Datagram
	var err error
	allocs := testing.AllocsPerRun(100, func() {
		if _, werr := unix.Write(client, msg); werr != nil {
			t.Fatal(werr)
		}
		d, err = l.Receive(buf)
	})
	if err != nil || string(buf[:d.N]) != "WATCHDOG=1" || d.Truncated {
		t.Fatalf("received %q (%+v), %v", buf[:d.N], d, err)
	}
	if d.PID != os.Getpid() || d.Unseen {
		t.Fatalf("sender %+v, want pid %d, seen", d, os.Getpid())
	}
	if allocs != 0 {
		t.Fatalf("a receive allocates %v times, want none", allocs)
	}
}

// A sender may attach open files (SCM_RIGHTS) to a datagram; the control
// buffer has room for the sender's credentials only, so the kernel closes
// those files rather than opening them in the supervisor, where nothing
// would ever close them.
func TestReceiveTakesNoFilesFromTheSender(t *testing.T) {
	l, client := listenTest(t)
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before := openFiles(t)
	rights := unix.UnixRights(int(f.Fd()), int(f.Fd()), int(f.Fd()))
	if err := unix.Sendmsg(client, []byte("READY=1"), rights, nil, 0); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	d, err := l.Receive(buf)
	if err != nil || string(buf[:d.N]) != "READY=1" || d.PID != os.Getpid() {
		t.Fatalf("received %q (%+v), %v", buf[:d.N], d, err)
	}
	if after := openFiles(t); after != before {
		t.Fatalf("%d open files before the datagram, %d after: the sender's files were taken in", before, after)
	}
}

func openFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

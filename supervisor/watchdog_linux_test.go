package supervisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// notifyAddr is the NOTIFY_SOCKET the supervisor gave its gateway pid.
// It polls: right after the supervisor reports the child, its
// /proc/<pid>/environ can still read empty (seen: [""] in 1 of 15 runs)
// while the new program is set up, and /proc offers nothing to wait on for
// that; one look every 10 ms until it names the socket, or 30 s.
func notifyAddr(t *testing.T, h *harness, pid int) string {
	t.Helper()
	var env []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var err error
		if env, err = h.prober.Environ(t.Context(), pid); err != nil {
			t.Fatal(err)
		}
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "NOTIFY_SOCKET="); ok && v != "" {
				return v
			}
		}
	}
	t.Fatalf("gateway %d has no NOTIFY_SOCKET in its environment after 30 s: %q", pid, env)
	return ""
}

// A process outside the gateway's tree cannot speak for it: the kernel's
// SCM_CREDENTIALS name the sender, and only the gateway's group counts.
func TestNotifyFromOutsideTheTreeIsIgnored(t *testing.T) {
	h := startHarnessWith(t, both(hermesChild(t, "silent", "600"), watchdogOf(time.Hour),
		func(c *Config) { c.ReadyTimeout = time.Hour }))
	st := h.waitState(Starting)
	addr := notifyAddr(t, h, st.Child.PID)
	// A socket in a directory only we may enter, not an abstract name that
	// /proc/net/unix shows to every user.
	if fi, err := os.Stat(filepath.Dir(addr)); !filepath.IsAbs(addr) || err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("NOTIFY_SOCKET=%q (directory %v, %v), want a socket in a 0700 directory", addr, fi, err)
	}
	// A process of its own session: neither the gateway nor its group.
	send := exec.Command("python3", "-c", `import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.connect(sys.argv[1])
s.send(b"READY=1\nSTATUS=forged")`, addr)
	if out, err := send.CombinedOutput(); err != nil {
		t.Fatalf("send: %v: %s", err, out)
	}
	h.waitFor("the forged datagram counted", func(s *Status) bool {
		if s.Child != nil && (s.Child.Ready || s.Child.Status == "forged") {
			t.Fatalf("a forged datagram was believed: %+v", s.Child)
		}
		return s.Child != nil && s.Child.NotifyIgnored >= 1
	})
	r := h.sup.Do(t.Context(), "status")
	if r.Status.State != Starting || r.Status.Child.Ready {
		t.Fatalf("after a forged READY=1: %+v", r.Status)
	}
}

// The next start's notify socket is made while a gateway runs, so anyone
// of our user could queue a datagram on it before the start; what they
// sent is dropped at the start, never read as the new gateway's.
func TestSpareNotifySocketStartsEmpty(t *testing.T) {
	w := &watchdog{log: zaptest.NewLogger(t), clock: SystemClock{}}
	w.prepare()
	defer w.dropSpare()
	if w.spareSock == nil {
		t.Fatal("prepare made no notify socket")
	}
	spare := w.spareSock.Addr()
	send := exec.Command("python3", "-c", `import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.connect(sys.argv[1])
s.send(b"WATCHDOG=trigger")
s.send(b"READY=1")`, spare)
	if out, err := send.CombinedOutput(); err != nil {
		t.Fatalf("send: %v: %s", err, out)
	}
	env := w.open()
	defer w.close(nil)
	if !slices.Contains(env, "NOTIFY_SOCKET="+spare) {
		t.Fatalf("the start's environment %q does not name the spare socket %s", env, spare)
	}
	if n, err := w.sock.Discard(); err != nil || n != 0 {
		t.Fatalf("the started gateway's socket held %d datagrams (%v) sent before its start", n, err)
	}
}

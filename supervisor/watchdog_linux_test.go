package supervisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A process outside the gateway's tree cannot speak for it: the kernel's
// SCM_CREDENTIALS name the sender, and only the gateway's group counts.
func TestNotifyFromOutsideTheTreeIsIgnored(t *testing.T) {
	h := startHarnessWith(t, both(hermesChild(t, "silent", "600"), watchdogOf(time.Hour),
		func(c *Config) { c.ReadyTimeout = time.Hour }))
	st := h.waitState(Starting)
	// Until the child has exec'd, its environment is still ours.
	var addr string
	// Polls with a deadline: the notify address appears in another process's environment, with nothing to wait on here.
	for deadline := time.Now().Add(30 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		env, err := h.prober.Environ(t.Context(), st.Child.PID)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "NOTIFY_SOCKET="); ok {
				addr = v
			}
		}
	}
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

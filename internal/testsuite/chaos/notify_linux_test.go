package chaos

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/syncbuf"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

// notifySendEnv makes the test binary a forger: it sends each of its
// arguments as one sd_notify datagram to the address the variable names,
// prints "sent" or the error for each, and exits.
const notifySendEnv = "HERMES_CHAOS_NOTIFY_SEND"

func init() {
	if addr := os.Getenv(notifySendEnv); addr != "" {
		for _, m := range os.Args[1:] {
			if err := forge(addr, m); err != nil {
				fmt.Println(err)
			} else {
				fmt.Println("sent")
			}
		}
		os.Exit(0)
	}
}

// forge sends msg to addr as Hermes' systemd_notify.py would ("@" is an
// abstract name).
func forge(addr, msg string) error {
	name := addr
	if strings.HasPrefix(name, "@") {
		name = "\x00" + name[1:]
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(msg))
	return err
}

// notifySockets lists the unix sockets of /proc/net/unix whose name says
// they are a supervisor's notify socket: what any user of the network
// namespace can read, with no need to see the gateway's environment.
func notifySockets(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 8 || fs[4] != "0002" { // SOCK_DGRAM
			continue
		}
		if n := fs[7]; strings.Contains(n, "hermes-supervisor") && strings.Contains(n, "notify") {
			out = append(out, n)
		}
	}
	return out
}

// forgedNotify is every field a forger could use against the gateway's
// supervisor: a crash loop (WATCHDOG=trigger), a false readiness, a false
// status line, and a stop that waits for an hour.
var forgedNotify = []string{"STATUS=forged", "READY=1", "EXTEND_TIMEOUT_USEC=3600000000", "WATCHDOG=trigger",
	"READY=1\nSTATUS=forged\nEXTEND_TIMEOUT_USEC=18446744073709551615\nWATCHDOG=trigger"}

// TestNotifyFromOutsidePIDNamespace runs the supervisor in a PID namespace
// of its own that shares the host's network namespace (docker
// --network host, nspawn, Kubernetes hostNetwork) and forges sd_notify
// datagrams from the host: the kernel reports such a sender as pid 0, and
// a sender the supervisor cannot see is not in the gateway's tree. Every
// field must be rejected and counted, and logged once however many come;
// the gateway must be neither marked ready nor restarted nor failed, and a
// stop must not wait for a forged EXTEND_TIMEOUT_USEC. Variants: the
// address read from the gateway's environment, every address
// /proc/net/unix lists, a flood, and another user of the host.
func TestNotifyFromOutsidePIDNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a PID namespace that shares the host's user namespace (CI runs as root)")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatal("unshare(1) is not installed: apt-get install util-linux")
	}
	h := newHome(t, "")
	// Hang detection off, as in the report: WATCHDOG=trigger alone caused the crash loop. The gateway never
	// gets ready by itself, so a forged READY=1 is the only way to Running; it ignores SIGTERM, so only the
	// kill after the 1 s stop timeout ends it, unless a forged extension is believed.
	cmd := exec.Command(unshare, "--fork", "--pid", "--mount-proc", "--kill-child",
		bin, "run", "--watchdog", "0", "--stop-timeout", "1s", "--ready-timeout", "1h",
		"--initial-backoff", "1ms", "--crash-loop-max", "2", "--",
		bin, demogateway.Command, "-ignore-term", "-ready-delay", "1h")
	cmd.Env = h.env()
	sup := &proc{cmd: cmd, out: &syncbuf.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = sup.out, sup.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { sup.err = cmd.Wait(); close(sup.done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-sup.done })

	var gw procInfo
	waitFor(t, "the gateway in the namespace", func() bool {
		gws, _ := gateways(h.Home)
		if len(gws) == 1 {
			gw = gws[0]
		}
		return len(gws) == 1
	}, sup.out.String)
	var addr string
	waitFor(t, "NOTIFY_SOCKET in the gateway's environment", func() bool {
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", gw.pid))
		for _, kv := range strings.Split(string(env), "\x00") {
			if v, ok := strings.CutPrefix(kv, "NOTIFY_SOCKET="); ok {
				addr = v
			}
		}
		return addr != ""
	}, sup.out.String)
	first := h.waitChild(t, sup, "a starting gateway", func(st *supervisor.Status) bool {
		return st.State == supervisor.Starting && st.Child != nil
	})

	sent := 0
	send := func(to string, msgs ...string) {
		for _, m := range msgs {
			if err := forge(to, m); err != nil {
				t.Fatalf("forge %q to %s: %v", m, to, err)
			}
			sent++
		}
	}
	send(addr, forgedNotify...)
	// What /proc/net/unix shows to anyone who looks: every such address
	// gets the whole set. Ours is among them.
	listed := notifySockets(t)
	if len(listed) == 0 {
		t.Fatalf("/proc/net/unix lists no notify socket; the gateway's is %s", addr)
	}
	found := false
	for _, a := range listed {
		// Only ours: other tests' supervisors may be listed too.
		if a == addr {
			found = true
			send(a, forgedNotify...)
		}
	}
	if !found {
		t.Fatalf("/proc/net/unix lists %q, not the gateway's %s", listed, addr)
	}
	// A flood: counted, never logged per datagram.
	for range 200 {
		send(addr, "WATCHDOG=trigger")
	}
	// Another user of the host, from outside the namespace too: it may not
	// even reach the socket; if it does, it is not believed either.
	other := exec.Command(testdir.OpenCopy(t, "chaos.test"), forgedNotify...)
	other.Env = append(os.Environ(), notifySendEnv+"="+addr)
	other.SysProcAttr = &syscall.SysProcAttr{Credential: nobodyCred}
	out, err := other.Output()
	if err != nil {
		t.Fatalf("the other user's forger: %v: %s", err, out)
	}
	if n := strings.Count(string(out), "sent\n"); n > 0 {
		// The socket's directory is the first guard against other users.
		t.Errorf("uid %d reached the notify socket %d times: %q", nobody, n, out)
		sent += n
	}
	t.Logf("%d forged datagrams delivered (the other user's: %q)", sent, out)

	st := h.waitChild(t, sup, "every forged datagram counted", func(st *supervisor.Status) bool {
		if st.Restarts != 0 || st.State != supervisor.Starting || st.Child == nil || st.Child.PID != first.Child.PID ||
			st.Child.Ready || st.Child.Status != "" {
			t.Fatalf("a forged datagram was believed: state %s (%s), restarts %d, child %+v\n%s", st.State, st.Reason, st.Restarts, st.Child, sup.out)
		}
		return st.Child.NotifyIgnored >= sent
	})
	if st.Child.NotifyIgnored != sent {
		t.Fatalf("%d datagrams counted as ignored, %d sent", st.Child.NotifyIgnored, sent)
	}

	// The stop: the gateway ignores SIGTERM; the forged extension of an
	// hour must not hold the kill back, and the stop answers.
	out2, code := h.exec("stop", "--timeout", "60s")
	if code != 0 {
		t.Fatalf("stop: exit %d: %s\n%s", code, out2, sup.out)
	}
	if exit := sup.exited(t, 30*time.Second); exit != 0 {
		t.Fatalf("supervisor exited %d\n%s", exit, sup.out)
	}
	log := sup.out.String()
	// Counted once it has exited: its log is written from a queue.
	if n := strings.Count(log, "sd_notify datagram from a sender"); n != 1 {
		t.Fatalf("the rejected senders were logged %d times, want once per start:\n%s", n, log)
	}
	if strings.Contains(log, "EXTEND_TIMEOUT_USEC") || !strings.Contains(log, "did not stop in time") {
		t.Fatalf("the stop did not end with the kill after the stop timeout:\n%s", log)
	}
	tally.add(count{Scenario: "forged sd_notify from outside the PID namespace", Tried: sent, Survived: sent,
		Note: "WATCHDOG=trigger, READY=1, STATUS=, EXTEND_TIMEOUT_USEC= (also 2^64-1) from the host, to the address in the gateway's environment and every one /proc/net/unix lists, a flood of 200, and uid 65534: all rejected and counted, logged once; the gateway neither ready nor restarted; the stop killed it after its 1 s stop timeout"})
}

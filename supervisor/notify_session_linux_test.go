package supervisor

import (
	"bufio"
	"golang.org/x/sys/unix"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// groupJoiner is a process of the supervisor's own session (as one started
// from the shell of a foreground `run` is) that moves into the gateway's
// process group, then sends msg to the gateway's notify socket, every
// period if period is non-zero. It prints "joined" or "refused" once, before
// it sends.
const groupJoiner = `import os, socket, sys, time
addr, gw, msg, period = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode(), float(sys.argv[4])
try:
    os.setpgid(0, os.getpgid(gw))
    print("joined", flush=True)
except OSError as e:
    print("refused", e, flush=True)
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.connect(addr)
while True:
    s.send(msg)
    if period == 0:
        break
    time.sleep(period)
`

// joinGroupAndSend starts groupJoiner in our session against gateway gw
// and returns what it said of its setpgid; it is killed at the test's end.
func joinGroupAndSend(t *testing.T, addr string, gw int, msg string, period time.Duration) string {
	t.Helper()
	cmd := exec.Command("python3", "-c", groupJoiner, addr, strconv.Itoa(gw), msg, strconv.FormatFloat(period.Seconds(), 'f', -1, 64))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	mySid, _ := unix.Getsid(0)
	if sid, err := unix.Getsid(cmd.Process.Pid); err != nil || sid != mySid {
		t.Fatalf("the sender is in session %d (%v), want ours, %d", sid, err, mySid)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the sender said nothing: %v", err)
	}
	return strings.TrimSpace(line)
}

// A process of the supervisor's session that joins the gateway's process
// group must not speak for the gateway: its READY=1 would mark ready a
// gateway that never spoke the protocol. It is ignored, counted and logged
// as any sender outside the tree is.
func TestNotifyReadyFromOurSessionInTheGatewayGroupIsIgnored(t *testing.T) {
	h := startHarnessWith(t, both(hermesChild(t, "silent", "600"), watchdogOf(time.Hour),
		func(c *Config) { c.ReadyTimeout = time.Hour }))
	st := h.waitState(Starting)
	addr := notifyAddr(t, h, st.Child.PID)
	said := joinGroupAndSend(t, addr, st.Child.PID, "READY=1\nSTATUS=forged", 0)
	t.Logf("the sender's setpgid into the gateway's group: %s", said)
	h.waitFor("the forged datagram counted", func(s *Status) bool {
		if s.Child != nil && (s.Child.Ready || s.Child.Status == "forged") {
			t.Fatalf("a forged datagram was believed (sender %s): %+v", said, s.Child)
		}
		return s.Child != nil && s.Child.NotifyIgnored >= 1
	})
	r := h.sup.Do(t.Context(), "status")
	if r.Status.State != Starting || r.Status.Child.Ready {
		t.Fatalf("after a forged READY=1: %+v", r.Status)
	}
	if n := h.logs.FilterMessageSnippet("outside the gateway's process tree").Len(); n != 1 {
		t.Fatalf("the rejection was logged %d times, want once", n)
	}
}

// The same sender's WATCHDOG=1, twice a deadline, must not keep a hung
// gateway for running: the hang is still caught.
func TestNotifyKeepAliveFromOurSessionInTheGatewayGroupIsIgnored(t *testing.T) {
	h := startHarnessWith(t, both(hermesChild(t, "hang"), watchdogOf(time.Second)))
	st := h.waitFor("an armed watchdog", armed)
	addr := notifyAddr(t, h, st.Child.PID)
	said := joinGroupAndSend(t, addr, st.Child.PID, "WATCHDOG=1", 250*time.Millisecond)
	t.Logf("the sender's setpgid into the gateway's group: %s", said)
	h.waitHangRestart(st.Child.PID)
	if n := h.logs.FilterMessageSnippet("outside the gateway's process tree").Len(); n < 1 {
		t.Fatal("the forged keep-alives were never logged as rejected")
	}
}

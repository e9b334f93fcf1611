package supervisor

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/pidns"
)

// TestZombieGroupNeedsAnOlderLeader attacks the rule that a successor
// whose predecessor's gateway is gone (named in the state file or not)
// kills the nonce carriers in a group whose leader is a zombie that
// started no later than every carrier. A member of such a group is a
// helper of the unrecorded gateway only when its leader is that old: a
// zombie leader younger than another carrier is some other group (a
// shell the agent started, and exited), and its members are left alone,
// as is a carrier in a group of its own.
func TestZombieGroupNeedsAnOlderLeader(t *testing.T) {
	// Orphans come to us, so the member's end can be waited for.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("no subreaper: %v", err)
	}
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
	for _, tt := range []struct {
		name       string
		older      bool // a carrier in a group of its own started before the leader
		wantKilled bool
	}{
		{"leader older than every carrier", false, true},
		{"leader younger than another carrier", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHome(t)
			nonce, hash := newNonce()
			env := []string{"HERMES_HOME=" + h.layout.Home, "HERMES_GATEWAY_LOCK_DIR=" + h.layout.LockDir, EnvNonce + "=" + nonce}
			var older *sentinel
			if tt.older {
				older = startSentinel(t, env...)
				awaitTickAfter(t, *older.id.StartTime)
			}
			leader := exec.Command(os.Args[0], "fork-bystander-and-exit")
			leader.Env = append(os.Environ(), env...)
			leader.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			in, _ := leader.StdinPipe()
			out, _ := leader.StdoutPipe()
			if err := leader.Start(); err != nil {
				t.Fatal(err)
			}
			// Not waited for until the end: the leader stays a zombie.
			t.Cleanup(func() { _ = leader.Wait() })
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			member, _ := strconv.Atoi(strings.TrimSpace(line))
			t.Cleanup(func() { _ = syscall.Kill(member, syscall.SIGKILL) })
			// The leader has printed, not exited: a race-enabled binary
			// lingers in os.Exit (GORACE's atexit_sleep_ms). Wait for its
			// exit without reaping it, so that the supervisor finds a
			// zombie leader and the member is ours to wait for.
			var info unix.Siginfo
			if err := unix.Waitid(unix.P_PID, leader.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
				t.Fatalf("wait for the leader's exit: %v", err)
			}
			inspectSettled(t, member)
			// The state file names a gateway that is gone, with the nonce.
			gone := exec.Command("true")
			if err := gone.Run(); err != nil {
				t.Fatal(err)
			}
			start := int64(1)
			writeState(t, h.layout, &Status{State: Running, BootID: thisBoot(t), NonceHash: hash, Command: []string{"/nonexistent/hermes"},
				Child: &Child{PID: gone.Process.Pid, StartTime: &start, Argv: []string{"/nonexistent/hermes"}, NonceHash: hash}})
			h.run(func(c *Config) {})
			h.waitReady()
			in.Close() // a member left alone now exits 0
			ws := waitExit(t, member)
			killed := ws.Signaled() || (ws.Exited() && ws.ExitStatus() == pidns.Signalled)
			if killed != tt.wantKilled {
				t.Fatalf("member of the zombie-led group: %v; want killed %v", ws, tt.wantKilled)
			}
			if older != nil {
				older.untouched()
			}
		})
	}
}

// awaitTickAfter returns once the clock that start times are counted in
// (clock ticks since boot, as /proc/uptime reads it) has passed tick, so
// that a process started next starts later. What it waits for is the
// clock itself: it sleeps for the time left until then, as read from
// /proc/uptime, and reads again.
func awaitTickAfter(t *testing.T, tick int64) {
	t.Helper()
	const perTick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	for range 100 {
		b, err := os.ReadFile("/proc/uptime")
		if err != nil {
			t.Fatal(err)
		}
		up, err := uptimeTicks(strings.Fields(string(b))[0])
		if err != nil {
			t.Fatal(err)
		}
		left := time.Duration(tick+2-up) * perTick
		if left <= 0 {
			return
		}
		// The event is the clock reaching a tick: nothing signals it,
		// and the time left to it is known exactly, so sleeping that
		// long is the wait, not a guess.
		time.Sleep(left)
	}
	t.Fatalf("the clock never passed tick %d", tick)
}

// uptimeTicks reads /proc/uptime's "seconds.hundredths" as the whole
// number of ticks it is. Read as a float, one value in four fell a
// nanosecond short of its own tick (68228.54 s is 68228539999999 ns),
// and awaitTickAfter then slept that nanosecond a hundred times and gave
// up.
func uptimeTicks(s string) (int64, error) {
	secs, frac, ok := strings.Cut(s, ".")
	if !ok || len(frac) != 2 {
		return 0, fmt.Errorf("/proc/uptime %q: not seconds with two decimals", s)
	}
	return strconv.ParseInt(secs+frac, 10, 64)
}

// waitExit reaps pid, a process re-parented to the test, failing the test
// if it has not exited within 10 s.
func waitExit(t *testing.T, pid int) unix.WaitStatus {
	t.Helper()
	type result struct {
		ws  unix.WaitStatus
		err error
	}
	done := make(chan result, 1)
	go func() {
		var ws unix.WaitStatus
		_, err := unix.Wait4(pid, &ws, 0, nil)
		done <- result{ws, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.ws
	case <-time.After(10 * time.Second):
		t.Fatalf("pid %d never exited", pid)
	}
	panic("unreachable")
}

// TestUptimeTicks covers every hundredth of a second from 68228.00 s on,
// the readings that failed as floats among them: each is its own tick.
func TestUptimeTicks(t *testing.T) {
	for c := int64(6822800); c < 6822900; c++ {
		s := fmt.Sprintf("%d.%02d", c/100, c%100)
		if got, err := uptimeTicks(s); err != nil || got != c {
			t.Fatalf("uptimeTicks(%q) = %d, %v; want %d", s, got, err, c)
		}
	}
	for _, bad := range []string{"68228", "68228.5", "68228.543", "x.12"} {
		if _, err := uptimeTicks(bad); err == nil {
			t.Errorf("uptimeTicks(%q) took it", bad)
		}
	}
}

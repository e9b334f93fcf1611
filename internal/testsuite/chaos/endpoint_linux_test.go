package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-agent/hermes-supervisor/platform/ctlsock"
	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

// TestControlEndpoint attacks the control endpoint of a running supervisor:
// another user, garbage, an oversized request, and a flood of idle clients.
// The supervisor must answer its owner throughout, refuse the flood instead
// of queueing it, and drop idle clients by itself.
func TestControlEndpoint(t *testing.T) {
	tried, survived := 0, 0
	for round := 0; round < *rounds; round++ {
		h := newHome(t, "")
		if os.Geteuid() == 0 {
			// Let uid 65534 reach the home, so only the socket's own
			// permission stands between it and the supervisor.
			for _, d := range []string{filepath.Dir(bin), filepath.Dir(h.dir), h.dir, h.Home} {
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Idle clients are dropped after the control timeout: a short one
		// keeps the flood round to a second instead of the default 5 s.
		sup := h.start(t, "run", "--demo", "--control-timeout", "1s")
		h.waitHealthy(t, sup, 0)
		addr := ctlsock.Address(h.Home)
		healthy := func(what string) {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			st, err := h.status(ctx)
			if err != nil || st.State != supervisor.Running {
				t.Fatalf("after %s: status %+v, %v", what, st, err)
			}
		}

		if os.Geteuid() == 0 {
			tried++
			other := &home{Layout: h.Layout, dir: h.dir, cred: &syscall.Credential{Uid: nobody, Gid: nobody}}
			out, code := other.exec("status")
			if code != 0 || !strings.Contains(out, "(state-file)") {
				t.Fatalf("status as another user: exit %d\n%s\nwant the state file's answer, marked (state-file)", code, out)
			}
			out, code = other.exec("stop")
			if code == 0 || !strings.Contains(out, "permission denied") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
				t.Fatalf("stop as another user: exit %d\n%s\nwant a one-line refusal", code, out)
			}
			healthy("another user's requests")
			survived++
		}

		tried++
		for _, garbage := range []string{"\x00\xff\xfe garbage\n", "{\"verb\":\n", "[1,2,3]\n", "{\"verb\":\"format-disk\"}\n", "no newline at all"} {
			reply := roundTrip(t, addr, []byte(garbage))
			if !strings.Contains(reply, `"ok":false`) && reply != "" {
				t.Fatalf("garbage %q answered %q", garbage, reply)
			}
		}
		healthy("garbage")
		survived++

		tried++
		reply := roundTrip(t, addr, []byte(strings.Repeat("x", 1<<20)))
		if !strings.Contains(reply, "request larger than") {
			t.Fatalf("1 MiB request answered %q", reply)
		}
		healthy("an oversized request")
		survived++

		tried++
		const flood = 200
		conns := make([]net.Conn, 0, flood)
		for range flood {
			c, err := ctlsock.Dial(context.Background(), addr)
			if err != nil {
				t.Fatalf("dial %d: %v", len(conns), err)
			}
			conns = append(conns, c)
		}
		// While the slots are held, our own status still gets an answer:
		// `status` falls back to the state file when the endpoint is busy.
		if out, code := h.exec("status"); code != 0 || !strings.Contains(out, "running") {
			t.Fatalf("status during a flood: exit %d\n%s", code, out)
		}
		// Every idle client is dropped by the server within its
		// request timeout, with nothing from us.
		var wg sync.WaitGroup
		closed := make(chan struct{}, flood)
		for _, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
				if _, err := io.Copy(io.Discard, c); err == nil {
					closed <- struct{}{}
				}
				c.Close()
			}()
		}
		wg.Wait()
		if len(closed) != flood {
			t.Fatalf("%d of %d idle clients were dropped by the server within 30 s", len(closed), flood)
		}
		healthy("a flood of idle clients")
		survived++

		_ = sup.cmd.Process.Signal(syscall.SIGTERM)
		if code := sup.exited(t, 30*time.Second); code != 0 {
			t.Fatalf("supervisor exited %d:\n%s", code, sup.out)
		}
	}
	tally.add(count{"7. control endpoint: other users, garbage, oversize, floods", tried, survived,
		"another user gets the state file's answer and a one-line refusal to `stop`; garbage and 1 MiB requests get an error and the supervisor keeps answering; of 200 idle clients at most 32 wait (each newer one pushes out the oldest with a busy answer) and all are dropped by the server, `status` answers throughout"})
}

// roundTrip writes b to the endpoint and returns what it answers, or "".
func roundTrip(t *testing.T, addr string, b []byte) string {
	t.Helper()
	c, err := ctlsock.Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(15 * time.Second))
	go func() {
		_, _ = c.Write(b)
		if uc, ok := c.(*net.UnixConn); ok && !strings.HasSuffix(string(b), "\n") {
			_ = uc.CloseWrite()
		}
	}()
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line)
}

// TestControlEndpointOutOfFiles exhausts the supervisor's file descriptors
// (its RLIMIT_NOFILE lowered to a few above what it holds, then idle
// clients until accept fails with EMFILE). Once, one such error ended the
// accept loop for good: `status`, `stop` and `restart` got no answer until
// a restart, and `status` did not fall back to the state file. While the
// descriptors are gone, `status` must answer from the state file and say
// so; once they are back, the endpoint must answer again.
func TestControlEndpointOutOfFiles(t *testing.T) {
	tried, survived := 0, 0
	for round := 0; round < *rounds; round++ {
		tried++
		h := newHome(t, "")
		// Idle clients keep their descriptor until we let go.
		sup := h.start(t, "run", "--demo", "--control-timeout", "60s")
		h.waitHealthy(t, sup, 0)
		pid := sup.cmd.Process.Pid
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			t.Fatal(err)
		}
		var old unix.Rlimit
		if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &old); err != nil {
			t.Fatal(err)
		}
		low := unix.Rlimit{Cur: uint64(len(fds) + 4), Max: old.Max}
		if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &low, nil); err != nil {
			t.Fatal(err)
		}
		restore := func() { _ = unix.Prlimit(pid, unix.RLIMIT_NOFILE, &old, nil) }
		t.Cleanup(restore)

		addr := ctlsock.Address(h.Home)
		var conns []net.Conn
		release := func() {
			for _, c := range conns {
				c.Close()
			}
			conns = nil
		}
		t.Cleanup(release)
		for range 16 {
			c, err := net.Dial("unix", addr)
			if err != nil {
				t.Fatalf("dial %d: %v", len(conns), err)
			}
			conns = append(conns, c)
		}
		waitOutput(t, sup, "too many open files")

		// The endpoint cannot answer now: status says what the state
		// file says, and that it does.
		out, code := h.exec("status", "--timeout", "3s")
		if code != 0 || !strings.Contains(out, "(state-file)") || !strings.Contains(out, "did not answer") || !strings.Contains(out, "state:      running") {
			t.Fatalf("status while the supervisor has no descriptors: exit %d\n%s\nwant running, from the state file, saying the endpoint did not answer", code, out)
		}

		release()
		restore()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		st, err := h.status(ctx)
		cancel()
		if err != nil || st.Source != "endpoint" {
			t.Fatalf("after the descriptors came back, the endpoint does not answer: %+v, %v\n%s", st, err, sup.out)
		}
		h.stopClean(t, sup)
		survived++
	}
	tally.add(count{"7b. control endpoint: out of file descriptors", tried, survived,
		"the supervisor's RLIMIT_NOFILE lowered and its descriptors taken by idle clients until accept fails with EMFILE: `status` answers from the state file and says the endpoint did not answer; once the descriptors are back the endpoint answers `status` and `stop` again"})
}

// TestControlEndpointUnreachable: a supervisor that runs but answers at
// none of its addresses (its socket removed, or a version that listens
// elsewhere) was reported "killed", and `stop` printed "not running" and
// exited 0. Now status says it runs, from its state file, and stop
// refuses to pretend.
func TestControlEndpointUnreachable(t *testing.T) {
	tried, survived := 0, 0
	for round := 0; round < *rounds; round++ {
		tried++
		h := newHome(t, "")
		sup := h.start(t, "run", "--demo")
		first := h.waitHealthy(t, sup, 0)
		addr := ctlsock.Address(h.Home)
		if err := os.Rename(addr, addr+".moved"); err != nil {
			t.Fatal(err)
		}
		out, code := h.exec("status")
		if code != 0 || !strings.Contains(out, "(state-file)") || strings.Contains(out, "killed") || !strings.Contains(out, "nothing answers") {
			t.Fatalf("status of a running supervisor whose socket is gone: exit %d\n%s", code, out)
		}
		out, code = h.exec("stop")
		if code == 0 || strings.Contains(out, "not running") || !strings.Contains(out, strconv.Itoa(sup.cmd.Process.Pid)) {
			t.Fatalf("stop of a running supervisor whose socket is gone: exit %d\n%s\nwant a refusal naming its pid", code, out)
		}
		if !alive(first.Child.PID) || !alive(sup.cmd.Process.Pid) {
			t.Fatal("the supervisor or its gateway died")
		}
		if err := os.Rename(addr+".moved", addr); err != nil {
			t.Fatal(err)
		}
		h.stopClean(t, sup)
		survived++
	}
	tally.add(count{"7c. control endpoint: a running supervisor nobody reaches", tried, survived,
		"its socket renamed away: `status` shows the state file's `running` and says nothing answers, never \"killed\"; `stop` exits non-zero naming the supervisor's pid instead of \"not running\""})
}

// TestControlEndpointSlowloris holds far more idle connections than the
// endpoint admits and sends nothing on them (or half a request, with no
// end of line), reconnecting whenever the supervisor lets one go. Once, 16 of them held every slot and the rest
// spun on "busy", so `status` got no answer from the endpoint within its
// 10 s. It must now be answered by the endpoint while the attack runs.
func TestControlEndpointSlowloris(t *testing.T) {
	tried, survived := 0, 0
	for round := 0; round < *rounds; round++ {
		tried++
		h := newHome(t, "")
		sup := h.start(t, "run", "--demo")
		h.waitHealthy(t, sup, 0)
		addr := ctlsock.Address(h.Home)
		ctx, cancel := context.WithCancel(context.Background())
		const attackers = 200
		var wg sync.WaitGroup
		holding := make(chan struct{}, attackers)
		for i := range attackers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				first := true
				for ctx.Err() == nil {
					c, err := net.Dial("unix", addr)
					if err != nil {
						t.Errorf("attacker dial: %v", err)
						return
					}
					if i%2 == 1 {
						// Half of them trickle the start of a request
						// that never ends.
						_, _ = c.Write([]byte(`{"verb":"sta`))
					}
					if first {
						holding <- struct{}{}
						first = false
					}
					stop := context.AfterFunc(ctx, func() { c.Close() })
					_, _ = io.Copy(io.Discard, c)
					stop()
					c.Close()
				}
			}()
		}
		for range attackers {
			<-holding
		}
		out, code := h.exec("status", "--json")
		cancel()
		wg.Wait()
		var st supervisor.Status
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Source != "endpoint" || st.State != supervisor.Running {
			t.Fatalf("status while %d idle clients hold the endpoint: exit %d\n%s\nwant the endpoint's answer", attackers, code, out)
		}
		h.stopClean(t, sup)
		survived++
	}
	tally.add(count{"7d. control endpoint: slowloris", tried, survived,
		"200 clients connect, send nothing (or half a request) and reconnect whenever dropped: `status` is answered by the endpoint (not the state file) while they do"})
}

// waitOutput waits up to 30 s for s in p's output.
func waitOutput(t *testing.T, p *proc, s string) {
	t.Helper()
	// Polls with a deadline: the output grows in another process.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if strings.Contains(p.out.String(), s) {
			return
		}
	}
	t.Fatalf("no %q in the output of %v within 30 s:\n%s", s, p.cmd.Args, p.out)
}

package chaos

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform"
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
		addr := platform.ControlAddress(h.Home)
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
			c, err := platform.DialControl(context.Background(), addr)
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
		"another user gets the state file's answer and a one-line refusal to `stop`; garbage and 1 MiB requests get an error and the supervisor keeps answering; 200 idle clients are refused past 16 and all dropped by the server, `status` answers throughout"})
}

// roundTrip writes b to the endpoint and returns what it answers, or "".
func roundTrip(t *testing.T, addr string, b []byte) string {
	t.Helper()
	c, err := platform.DialControl(context.Background(), addr)
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

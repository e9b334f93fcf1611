package chaos

import (
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

var anotherSupervisor = regexp.MustCompile(`^.*another hermes-supervisor \(pid [0-9]+\) already supervises .*$`)

// TestSupervisorsRace starts three supervisors for one home at the same
// instant: exactly one runs the gateway, the others exit 1 with one clear
// line, in every round.
func TestSupervisorsRace(t *testing.T) {
	const n = 3
	tried, survived := 0, 0
	for round := 0; round < *rounds*5; round++ {
		h := newHome(t, "")
		var wg sync.WaitGroup
		gate := make(chan struct{})
		sups := make([]*proc, n)
		for i := range sups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				sups[i] = h.start(t, "run", "--demo")
			}()
		}
		close(gate)
		wg.Wait()
		tried++
		// The losers exit at once; give them 10 s on a loaded machine.
		exitedCount := func() int {
			n := 0
			for _, p := range sups {
				select {
				case <-p.done:
					n++
				default:
				}
			}
			return n
		}
		waitFor(t, "two supervisors to give up", func() bool { return exitedCount() >= n-1 })
		var winner *proc
		for _, p := range sups {
			select {
			case <-p.done:
				if code := p.exited(t, 0); code != 1 {
					t.Fatalf("round %d: a losing supervisor exited %d, want 1:\n%s", round, code, p.out)
				}
				if out := strings.TrimSpace(p.out.String()); !anotherSupervisor.MatchString(out) || strings.Count(out, "\n") > 0 {
					t.Fatalf("round %d: a losing supervisor said %q, want one line naming the other", round, out)
				}
			default:
				winner = p
			}
		}
		if winner == nil {
			t.Fatalf("round %d: no supervisor kept running", round)
		}
		st := h.waitHealthy(t, winner, 0)
		if st.Supervisor.PID != winner.cmd.Process.Pid {
			t.Fatalf("round %d: status names supervisor %d, the survivor is %d", round, st.Supervisor.PID, winner.cmd.Process.Pid)
		}
		if gws, _ := gateways(h.Home); len(gws) != 1 {
			t.Fatalf("round %d: %d gateways", round, len(gws))
		}
		_ = winner.cmd.Process.Signal(syscall.SIGTERM)
		if code := winner.exited(t, 30*time.Second); code != 0 {
			t.Fatalf("round %d: the supervisor exited %d after SIGTERM:\n%s", round, code, winner.out)
		}
		survived++
	}
	tally.add(count{"5. three supervisors started for one home at once", tried, survived,
		"exactly one runs the gateway (advisory lock `hermes-supervisor.lock`); the others exit 1 with one line: `another hermes-supervisor (pid N) already supervises …`"})
}

// TestForeignGateway starts a gateway by hand before the supervisor: it is
// never signalled, status names it and says what to do, and the supervisor
// takes over as soon as it exits.
func TestForeignGateway(t *testing.T) {
	tried, survived := 0, 0
	for round := 0; round < *rounds; round++ {
		h := newHome(t, "")
		fg := h.start(t, demogateway.Command)
		waitFor(t, "the foreign gateway's pid file", func() bool { return recordPID(h.PIDFile()) == fg.cmd.Process.Pid })
		sup := h.start(t, "run", "--initial-backoff=20ms", "--max-backoff=50ms")
		tried++
		h.waitChild(t, sup, "backoff because of the foreign gateway", func(st *supervisor.Status) bool {
			return st.State == supervisor.Backoff && strings.Contains(st.Reason, "not started by this supervisor")
		})
		// Several more tries, each a sweep that keeps its pid file, and
		// still it must not have been signalled.
		waitFor(t, "three more tries", func() bool {
			return strings.Count(sup.out.String(), `gateway.pid", "kind": "pid-file", "verdict": "alive", "action": "keep"`) >= 4
		})
		out, code := h.exec("status")
		if code != 0 || !strings.Contains(out, "not started by this supervisor") || !strings.Contains(out, "pid") {
			t.Fatalf("status while a foreign gateway holds the home (exit %d):\n%s", code, out)
		}
		if !alive(fg.cmd.Process.Pid) {
			t.Fatalf("the foreign gateway died:\n%s", sup.out)
		}
		// Our SIGTERM, without the planned-stop marker, is the first
		// signal it gets: the demo gateway says so once.
		_ = fg.cmd.Process.Signal(syscall.SIGTERM)
		fg.exited(t, 30*time.Second)
		if n := strings.Count(fg.out.String(), "SIGTERM"); n != 1 {
			t.Fatalf("the foreign gateway saw %d SIGTERMs, want only ours:\n%s", n, fg.out)
		}
		st := h.waitHealthy(t, sup, fg.cmd.Process.Pid)
		if st.Child.Adopted {
			t.Fatal("the supervisor adopted a gateway it did not start")
		}
		_ = sup.cmd.Process.Signal(syscall.SIGTERM)
		sup.exited(t, 30*time.Second)
		survived++
	}
	tally.add(count{"6. a live foreign gateway owns the home", tried, survived,
		"never signalled (the only SIGTERM it sees is the test's own); `status` says the home is held by a gateway not started by this supervisor; takeover right after it exits"})
}

package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/pidns"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

const (
	// bystanderEnv makes the test binary a bystander: a process that
	// happens to get a recorded pid.
	bystanderEnv = "HERMES_CHAOS_BYSTANDER"
	// tallyEnv names the file the namespaced run writes its count to.
	tallyEnv = "HERMES_CHAOS_TALLY"
)

func init() {
	if os.Getenv(bystanderEnv) == "1" {
		pidns.Bystander()
	}
}

// TestPIDReuse gives the pid named by stale files to another process, in a
// private PID namespace where pids can be chosen: an unrelated process, a
// process that looks exactly like a gateway but started later, and the pid
// of a gateway whose supervisor was SIGKILLed. The supervisor must never
// signal it, never adopt it, and start its own gateway.
func TestPIDReuse(t *testing.T) {
	if !inPIDNSRun(t, "TestPIDReuse") {
		return
	}
	if !pidns.Available() {
		t.Skip(pidns.Why())
	}
	start := func(t *testing.T, pid int, argv ...string) (*exec.Cmd, io.WriteCloser, procstate.Identity) {
		t.Helper()
		cmd := exec.Command(os.Args[0])
		cmd.Args = argv
		cmd.Env = append(os.Environ(), bystanderEnv+"=1", "GORACE=atexit_sleep_ms=0")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := pidns.StartBystander(cmd, pid); err != nil {
			t.Fatal(err)
		}
		id, err := procstate.NewProber(procstate.Options{StartTolerance: -1}).Inspect(context.Background(), pid)
		if err != nil {
			t.Fatal(err)
		}
		return cmd, stdin, id
	}
	gatewayArgv := []string{"/usr/local/bin/hermes", "gateway", "run"}
	stale := func(h *home, pid int, st *int64) {
		r := lockstore.NewRecord(procstate.Identity{PID: pid, StartTime: st, Argv: gatewayArgv}, h.Home)
		b, _ := json.Marshal(r)
		old := time.Now().Add(-time.Minute)
		r.Scope = demogateway.Scope
		sb, _ := json.Marshal(r)
		for path, data := range map[string][]byte{h.PIDFile(): b, h.ScopedLock(demogateway.Scope, "demo-token"): sb} {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			_ = os.Chtimes(path, old, old)
		}
	}
	earlier := func(id procstate.Identity) *int64 { v := *id.StartTime - 500; return &v }
	tests := []struct {
		name string
		// setup returns the pid to be taken by the bystander, after
		// leaving files that name it.
		setup func(t *testing.T, h *home, pid int) int
		argv  []string
		// files writes the stale files once the bystander runs.
		files func(h *home, id procstate.Identity)
	}{
		{"unrelated process, other start time", nil, []string{"bystander"},
			func(h *home, id procstate.Identity) { stale(h, id.PID, earlier(id)) }},
		{"unrelated process, start time unknown", nil, []string{"bystander"},
			func(h *home, id procstate.Identity) { stale(h, id.PID, nil) }},
		{"same name as the gateway, other start time", nil, gatewayArgv,
			func(h *home, id procstate.Identity) { stale(h, id.PID, earlier(id)) }},
		{"pid of the gateway of a SIGKILLed supervisor", orphanedPID, gatewayArgv, nil},
	}
	tried, survived := 0, 0
	next := 5000
	for round := 0; round < *rounds; round++ {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				tried++
				h := newHome(t, "")
				pid := next
				next += 50
				if tt.setup != nil {
					pid = tt.setup(t, h, pid)
				}
				cmd, stdin, id := start(t, pid, tt.argv...)
				if tt.setup != nil {
					// The killed gateway's own files name it. A bystander
					// that took its pid within the same clock tick (10 ms),
					// with a gateway's command line, is that gateway by every
					// rule Hermes has: the supervisor rightly refuses the home
					// then. The layout wants the reuse Hermes can tell, so
					// the bystander is started again until its tick is later.
					gw, err := lockstore.ReadRecord(h.PIDFile())
					if err != nil || gw.StartTime == nil {
						t.Fatalf("the killed gateway's gateway.pid: %+v, %v", gw, err)
					}
					for tries := 0; *id.StartTime == *gw.StartTime; tries++ {
						if tries == 1000 {
							t.Fatalf("the bystander starts in the killed gateway's clock tick %d, 1000 times", *gw.StartTime)
						}
						_ = cmd.Process.Kill()
						_ = cmd.Wait()
						cmd, stdin, id = start(t, pid, tt.argv...)
					}
				}
				defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
				if tt.files != nil {
					tt.files(h, id)
				}
				sup := h.start(t, "run", "--demo")
				st := h.waitHealthy(t, sup, pid)
				if st.Child.Adopted || st.Child.PID == pid {
					t.Fatalf("the supervisor took the bystander for its gateway: %+v", st.Child)
				}
				if got := recordPID(h.PIDFile()); got != st.Child.PID {
					t.Fatalf("gateway.pid names %d, want the new gateway %d", got, st.Child.PID)
				}
				_ = sup.cmd.Process.Signal(syscall.SIGTERM)
				if code := sup.exited(t, 30*time.Second); code != 0 {
					t.Fatalf("supervisor exited %d:\n%s", code, sup.out)
				}
				if !alive(pid) {
					t.Fatalf("the bystander at pid %d died", pid)
				}
				stdin.Close()
				err := cmd.Wait()
				var ee *exec.ExitError
				if errors.As(err, &ee) && ee.ExitCode() == pidns.Signalled {
					t.Fatalf("the bystander at pid %d was signalled", pid)
				}
				if err != nil {
					t.Fatalf("bystander: %v", err)
				}
				survived++
			})
		}
	}
	c := count{"3. pid reuse, in a private PID namespace", tried, survived,
		"the recorded pid taken by an unrelated process (start time other or unknown), by a process named `hermes gateway run` started later, and by a new process at the pid of a SIGKILLed supervisor's gateway: never signalled or adopted, a new gateway of our own every time"}
	if path := os.Getenv(tallyEnv); path != "" && !t.Failed() {
		b, _ := json.Marshal(c)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// orphanedPID runs a supervisor, SIGKILLs it and then its gateway, so its
// state file and the gateway's files name a dead child; it returns that
// child's pid, free again for a bystander. Inside the namespace this test
// is pid 1, so the orphan becomes ours to reap.
func orphanedPID(t *testing.T, h *home, _ int) int {
	t.Helper()
	sup := h.start(t, "run", "--demo")
	st := h.waitHealthy(t, sup, 0)
	sup.kill()
	pid := st.Child.PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatalf("reap the orphaned gateway %d: %v", pid, err)
	}
	// Its helper-free demo gateway leaves gateway.pid and the lock behind.
	if recordPID(h.PIDFile()) != pid {
		t.Fatalf("gateway.pid does not name the killed gateway %d", pid)
	}
	return pid
}

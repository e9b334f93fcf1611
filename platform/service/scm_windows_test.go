package service

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/ctlsock"
)

// exeEnv names the windows hermes-supervisor.exe the SCM test installs;
// `make wine-test` builds it and sets this.
const exeEnv = "HERMES_SUPERVISOR_EXE"

// TestMain lets the test binary, copied as hermes.exe, stand in for
// Hermes' console launcher in TestSCMRunsTheGatewayInstallFound.
func TestMain(m *testing.M) {
	if strings.EqualFold(filepath.Base(os.Args[0]), "hermes.exe") {
		stubGateway()
	}
	os.Exit(m.Run())
}

// stubGateway records how it was started in $HERMES_HOME\stub-ran; once
// $HERMES_HOME\stub-ready exists it says it is running in
// gateway_state.json, as Hermes does once its adapters are up, and until
// then the supervisor does not count it ready. It exits on the supervisor's
// planned-stop marker, as Hermes does on Windows.
func stubGateway() {
	if slices.Contains(os.Args, "--help") {
		// The supervisor asks `hermes gateway run --help` whether this
		// Hermes takes --external-supervisor: an older one, which does not.
		fmt.Println("usage: hermes gateway run [-h] [--replace]")
		os.Exit(0)
	}
	home := os.Getenv("HERMES_HOME")
	_ = os.MkdirAll(home, 0o700)
	b, _ := json.Marshal(map[string]any{"argv": os.Args, "path": os.Getenv("PATH")})
	_ = os.WriteFile(filepath.Join(home, "stub-ran"), b, 0o600)
	marker := lockstore.Layout{Home: home}.PlannedStopMarker()
	ready := false
	// Polled: the test and the supervisor are other processes.
	for ; ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(marker); err == nil {
			os.Exit(0)
		}
		if _, err := os.Stat(filepath.Join(home, "stub-ready")); err != nil || ready {
			continue
		}
		st, _ := json.Marshal(map[string]any{"pid": os.Getpid(), "kind": "hermes-gateway", "argv": os.Args, "gateway_state": "running"})
		tmp := filepath.Join(home, ".stub-state.tmp")
		if os.WriteFile(tmp, st, 0o600) == nil && os.Rename(tmp, filepath.Join(home, "gateway_state.json")) == nil {
			ready = true
		}
	}
}

// testPassword is what the life cycle installs with: Wine's service
// manager stores no credentials and runs every service as the Wine user;
// on Windows the test needs the real password of the user running it.
func testPassword(t *testing.T) string {
	if isWine() {
		return "wine-keeps-no-password"
	}
	pw := os.Getenv(PasswordEnv)
	if pw == "" {
		t.Skip(PasswordEnv + " is not set: on Windows the service runs as the user running the test")
	}
	return pw
}

// TestSCMLifeCycle installs the real binary as a service, sees its
// gateway run through the control pipe, stops, starts and uninstalls it.
func TestSCMLifeCycle(t *testing.T) {
	exe := os.Getenv(exeEnv)
	if exe == "" {
		t.Skip(exeEnv + " is not set: `make wine-test` (or a Windows CI job) sets it")
	}
	dir := testdir.New(t)
	c := Config{Exe: exe, Home: filepath.Join(dir, "home"), LockDir: filepath.Join(dir, "locks"), StopTimeout: 10 * time.Second, Demo: true,
		Wait: time.Minute, Password: testPassword(t)} // install and start wait until the SCM reports it running
	ctx := context.Background()
	run := func(context.Context, []string) error { return nil } // schtasks is not needed here
	plan, err := SCM{}.Install(c, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := plan.Apply(ctx, run); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p, err := (SCM{}).Uninstall(c); err == nil {
			_ = p.Apply(ctx, run)
		}
	})

	err = withService(Name, windows.SERVICE_QUERY_CONFIG, func(s *mgr.Service) error {
		// QueryServiceConfig itself: mgr's Config also asks for options
		// Wine does not keep.
		var need uint32
		_ = windows.QueryServiceConfig(s.Handle, nil, 0, &need)
		buf := make([]byte, need)
		qc := (*windows.QUERY_SERVICE_CONFIG)(unsafe.Pointer(&buf[0]))
		if err := windows.QueryServiceConfig(s.Handle, qc, need, &need); err != nil {
			t.Fatal(err)
		}
		if bin := windows.UTF16PtrToString(qc.BinaryPathName); qc.StartType != mgr.StartAutomatic || !strings.Contains(bin, "--service") || !strings.Contains(bin, c.Home) {
			t.Errorf("service start type %d, command line %s", qc.StartType, bin)
		}
		acts, err := s.RecoveryActions()
		if isWine() && err != nil {
			t.Logf("recovery actions cannot be read back under Wine (%v); they are checked on Windows", err)
			return nil
		}
		if err != nil || len(acts) != len(recoveryActions) || acts[0].Type != mgr.ServiceRestart || acts[0].Delay != recoveryActions[0].Delay {
			t.Errorf("recovery actions %+v, %v; want %+v", acts, err, recoveryActions)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the installed service cannot be opened: %v", err)
	}

	if st := serviceState(t, Name); st != svc.Running {
		t.Errorf("service state %d after install waited for it, want running", st)
	}
	if defs := (SCM{}).Installed(c); len(defs) != 1 || !defs[0].System || defs[0].Home != c.Home {
		t.Errorf("Installed = %+v, want the machine's service of %s", defs, c.Home)
	}
	waitState(t, c, "running")
	stop, _ := SCM{}.Control(c, "stop")
	if err := stop.Apply(ctx, run); err != nil {
		t.Fatal(err)
	}
	if st := serviceState(t, Name); st != svc.Stopped {
		t.Fatalf("service state %d after stop", st)
	}
	start, _ := SCM{}.Control(c, "start")
	if err := start.Apply(ctx, run); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, "running")

	un, _ := SCM{}.Uninstall(c)
	if err := un.Apply(ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := withService(Name, windows.SERVICE_QUERY_STATUS, func(*mgr.Service) error { return nil }); err == nil {
		t.Fatal("the service is still installed after uninstall")
	}
}

// isWine reports whether the test runs under Wine.
func isWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}

func serviceState(t *testing.T, name string) svc.State {
	t.Helper()
	return serviceStatus(t, name).State
}

// serviceStatus asks QueryServiceStatusEx itself: mgr's Query drops the
// checkpoint and the wait hint.
func serviceStatus(t *testing.T, name string) svc.Status {
	t.Helper()
	var p windows.SERVICE_STATUS_PROCESS
	err := withService(name, windows.SERVICE_QUERY_STATUS, func(s *mgr.Service) error {
		var need uint32
		return windows.QueryServiceStatusEx(s.Handle, windows.SC_STATUS_PROCESS_INFO, (*byte)(unsafe.Pointer(&p)), uint32(unsafe.Sizeof(p)), &need)
	})
	if err != nil {
		t.Fatal(err)
	}
	return svc.Status{State: svc.State(p.CurrentState), Accepts: svc.Accepted(p.ControlsAccepted), CheckPoint: p.CheckPoint,
		WaitHint: p.WaitHint, ProcessId: p.ProcessId, Win32ExitCode: p.Win32ExitCode}
}

// waitState asks the supervisor over its control pipe until it reports
// state, for up to a minute (Wine starts processes slowly).
func waitState(t *testing.T, c Config, state string) {
	t.Helper()
	addr := ctlsock.Address(c.Home)
	var last string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := ctlsock.Dial(ctx, addr)
		if err != nil {
			cancel()
			last = err.Error()
			continue
		}
		_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
		_, _ = conn.Write([]byte(`{"verb":"status","id":1}` + "\n"))
		line, err := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		cancel()
		var resp struct {
			Status *struct {
				State string `json:"state"`
			} `json:"status"`
		}
		if err == nil && json.Unmarshal([]byte(line), &resp) == nil && resp.Status != nil {
			last = resp.Status.State
			if last == state {
				return
			}
		}
	}
	log, _ := os.ReadFile(filepath.Join(c.Home, "hermes-supervisor.log"))
	t.Fatalf("the supervisor never reported %s (last: %s); its log:\n%s", state, last, log)
}

// TestSCMInstallRefusesPercent is the attack behind checkCommandLine, on
// the service manager itself: a home holding %WINDIR% was started as the
// home with the variable's value in its place. Install must refuse it
// before it plans or creates anything.
func TestSCMInstallRefusesPercent(t *testing.T) {
	dir := testdir.New(t)
	c := Config{Exe: filepath.Join(dir, "hermes-supervisor.exe"), Home: filepath.Join(dir, "h %WINDIR% x"), LockDir: filepath.Join(dir, "locks"),
		StopTimeout: 10 * time.Second, Demo: true, Password: testPassword(t), Origins: Origins{Home: Origin{From: "--home"}}}
	plan, err := SCM{}.Install(c, false)
	if !errors.Is(err, ErrUnsafeValue) || !strings.Contains(err.Error(), "--home") || len(plan.Steps) != 0 {
		t.Fatalf("install of a home holding %%WINDIR%%: %d steps, %v; want none and ErrUnsafeValue naming --home", len(plan.Steps), err)
	}
	if defs := (SCM{}).Installed(c); len(defs) != 0 {
		t.Errorf("a refused install left a service: %+v", defs)
	}
}

// TestSCMRunsTheGatewayInstallFound installs with Demo false and a stub
// hermes.exe on the test's PATH only: the service, whose PATH is the
// service manager's, must run that stub (pinned at install), never the
// demo gateway.
func TestSCMRunsTheGatewayInstallFound(t *testing.T) {
	exe := os.Getenv(exeEnv)
	if exe == "" {
		t.Skip(exeEnv + " is not set: `make wine-test` (or a Windows CI job) sets it")
	}
	dir := testdir.New(t)
	bin := filepath.Join(dir, "venv", "Scripts")
	if err := os.MkdirAll(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	stub := filepath.Join(bin, "hermes.exe")
	if err := os.WriteFile(stub, self, 0o700); err != nil {
		t.Fatal(err)
	}
	path := bin + string(os.PathListSeparator) + os.Getenv("PATH")
	argv, err := ResolveCommand([]string{"hermes", "gateway", "run"}, path)
	if err != nil {
		t.Fatal(err)
	}
	// No wait at install: the stub is not ready until the test says so,
	// and the service must be StartPending until then.
	c := Config{Exe: exe, Home: filepath.Join(dir, "home"), LockDir: filepath.Join(dir, "locks"), StopTimeout: 10 * time.Second,
		Command: argv, Path: path, Password: testPassword(t)}
	ctx := context.Background()
	run := func(context.Context, []string) error { return nil }
	plan, err := SCM{}.Install(c, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p, err := (SCM{}).Uninstall(c); err == nil {
			_ = p.Apply(ctx, run)
		}
	})
	if err := plan.Apply(ctx, run); err != nil {
		t.Fatal(err)
	}
	var ran struct {
		Argv []string `json:"argv"`
		Path string   `json:"path"`
	}
	mark := filepath.Join(c.Home, "stub-ran")
	waitStub := func() {
		t.Helper()
		// Polls with a deadline: the stub is another process.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			b, err := os.ReadFile(mark)
			if err == nil && json.Unmarshal(b, &ran) == nil {
				return
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(filepath.Join(c.Home, "hermes-supervisor.log"))
				t.Fatalf("the service never ran the stub %s; its log:\n%s", stub, log)
			}
		}
	}
	waitStub()
	// The gateway runs but is not ready: the SCM must say StartPending,
	// with a checkpoint that keeps moving (polled: the SCM has no events).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		st := serviceStatus(t, Name)
		if st.State != svc.StartPending {
			t.Fatalf("service status %+v while its gateway is not ready, want start pending", st)
		}
		if st.CheckPoint > 1 && st.WaitHint > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the start-pending checkpoint never moved: %+v", st)
		}
	}
	// A stop before the gateway is ready works.
	stop, _ := SCM{}.Control(c, "stop")
	if err := stop.Apply(ctx, run); err != nil {
		t.Fatalf("stop while start pending: %v", err)
	}
	if st := serviceState(t, Name); st != svc.Stopped {
		t.Fatalf("service state %d after a stop while start pending", st)
	}
	// Started again, it is ready once the stub says so, and start --wait
	// returns then.
	if err := os.Remove(mark); err != nil {
		t.Fatal(err)
	}
	c.Wait = time.Minute
	start, _ := SCM{}.Control(c, "start")
	done := make(chan error, 1)
	go func() { done <- start.Apply(ctx, run) }()
	waitStub()
	if st := serviceState(t, Name); st != svc.StartPending {
		t.Errorf("service state %d before the gateway is ready, want start pending", st)
	}
	if err := os.WriteFile(filepath.Join(c.Home, "stub-ready"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("start --wait: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("start --wait did not return")
	}
	if st := serviceState(t, Name); st != svc.Running {
		t.Errorf("service state %d after start --wait, want running", st)
	}
	waitState(t, c, "running")
	if len(ran.Argv) != 3 || !strings.EqualFold(ran.Argv[0], stub) || ran.Argv[1] != "gateway" || ran.Argv[2] != "run" {
		t.Errorf("the service ran %q, want %s gateway run", ran.Argv, stub)
	}
	if !strings.Contains(strings.ToLower(ran.Path), strings.ToLower(bin)) {
		if isWine() {
			t.Logf("Wine's service manager passed PATH %q without the pinned %s (it ignores the service's registry Environment); Windows must be checked", ran.Path, bin)
		} else {
			t.Errorf("the gateway's PATH %q lacks the pinned %s", ran.Path, bin)
		}
	}
}

// testHandler is a handler with short start-pending checkpoints whose
// crash is recorded instead of ending the test binary.
func testHandler(run func(ctx context.Context, n *Notifications) error) (*handler, chan error) {
	crashed := make(chan error, 1)
	n := NewNotifications()
	h := &handler{note: n, stopWait: 90 * time.Second, shutdownBudget: 300 * time.Millisecond,
		checkpointEvery: 20 * time.Millisecond, startWaitHint: time.Second, crash: func(err error) { crashed <- err }}
	h.run = func(ctx context.Context) error { return run(ctx, n) }
	return h, crashed
}

// nextStatus returns the handler's next status, skipping start-pending
// checkpoints unless keep is set, failing after a deadline.
func nextStatus(t *testing.T, status <-chan svc.Status, keep bool) svc.Status {
	t.Helper()
	for {
		select {
		case st := <-status:
			if st.State == svc.StartPending && st.CheckPoint > 1 && !keep {
				continue
			}
			return st
		case <-time.After(10 * time.Second):
			t.Fatal("no status from the handler within 10s")
		}
	}
}

// The SCM sees StartPending, with a checkpoint that keeps moving, until the
// supervisor says READY=1; a stop is taken at any time, and a gateway
// ready after the stop began never makes the service Running.
func TestHandlerStatusSequence(t *testing.T) {
	// run stands in for the supervisor: release lets it return.
	type run func(ctx context.Context, n *Notifications, release <-chan struct{}) error
	untilStopped := func(ctx context.Context, _ *Notifications, _ <-chan struct{}) error {
		<-ctx.Done()
		return nil
	}
	type step struct {
		notify  string  // report this to the handler's Notifications,
		cmd     svc.Cmd // or send this control,
		release bool    // or let run return;
		want    svc.State
	}
	tests := []struct {
		name  string
		run   run
		steps []step // then Execute must return, with no status left but pending checkpoints before any step
		crash string // the error a crash reports; empty for none
	}{
		{name: "ready then stop", run: untilStopped, steps: []step{
			{notify: "STATUS=starting\nREADY=1", want: svc.Running},
			{cmd: svc.Stop, want: svc.StopPending},
		}},
		{name: "stop before ready", run: func(ctx context.Context, n *Notifications, _ <-chan struct{}) error {
			<-ctx.Done()
			n.Notify("READY=1") // readiness that lost the race with the stop
			return nil
		}, steps: []step{
			{cmd: svc.Stop, want: svc.StopPending},
		}},
		{name: "shutdown before ready", run: untilStopped, steps: []step{
			{cmd: svc.PreShutdown, want: svc.StopPending},
		}},
		{name: "the supervisor stops on its own", run: func(_ context.Context, _ *Notifications, release <-chan struct{}) error {
			<-release
			return nil
		}, steps: []step{
			{notify: "READY=1", want: svc.Running},
			{notify: "STOPPING=1", want: svc.StopPending},
			{release: true},
		}},
		{name: "run error before ready", run: func(context.Context, *Notifications, <-chan struct{}) error {
			return errors.New("the home is unusable")
		}, crash: "the home is unusable"},
		{name: "run error after ready", run: func(_ context.Context, _ *Notifications, release <-chan struct{}) error {
			<-release
			return errors.New("the control pipe broke")
		}, steps: []step{
			{notify: "READY=1", want: svc.Running},
			{release: true},
		}, crash: "the control pipe broke"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gate, release := make(chan struct{}), make(chan struct{})
			h, crashed := testHandler(func(ctx context.Context, n *Notifications) error {
				<-gate // runs once the first checkpoints were seen
				return tt.run(ctx, n, release)
			})
			reqs := make(chan svc.ChangeRequest)
			status := make(chan svc.Status, 64)
			done := make(chan uint32, 1)
			go func() {
				_, code := h.Execute(nil, reqs, status)
				done <- code
			}()
			// Pending, with the checkpoint raised while nothing is ready.
			for want := uint32(1); want <= 3; want++ {
				st := nextStatus(t, status, true)
				if st.State != svc.StartPending || st.CheckPoint != want || st.WaitHint != 1000 || st.Accepts != accepts {
					t.Fatalf("status %+v, want start pending, checkpoint %d, a 1 s hint, accepting %#x", st, want, accepts)
				}
			}
			close(gate)
			for _, s := range tt.steps {
				switch {
				case s.notify != "":
					h.note.Notify(s.notify)
				case s.cmd != 0:
					reqs <- svc.ChangeRequest{Cmd: s.cmd}
				case s.release:
					close(release)
					continue
				}
				st := nextStatus(t, status, false)
				if st.State != s.want {
					t.Fatalf("after %+v: status %+v, want state %d", s, st, s.want)
				}
				if st.State == svc.Running && st.Accepts != accepts {
					t.Errorf("running accepts %#x, want %#x", st.Accepts, accepts)
				}
			}
			select {
			case code := <-done:
				if (tt.crash != "") != (code != 0) {
					t.Errorf("Execute returned %d", code)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Execute did not return")
			}
			select {
			case err := <-crashed:
				if tt.crash == "" || err.Error() != tt.crash {
					t.Errorf("crashed with %v, want %q", err, tt.crash)
				}
			default:
				if tt.crash != "" {
					t.Errorf("no crash, want one with %q", tt.crash)
				}
			}
			close(status)
			for st := range status {
				if st.State != svc.StartPending || len(tt.steps) > 0 {
					t.Errorf("status %+v after the last expected one", st)
				}
			}
		})
	}
}

// A pre-shutdown request gives the gateway the short shutdown budget, not
// the stop timeout: Execute returns (and the job object ends the gateway)
// once the budget is spent, whatever the supervisor is still doing.
func TestPreShutdownBudget(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	h, _ := testHandler(func(ctx context.Context, _ *Notifications) error {
		<-ctx.Done()
		<-release // a gateway slower than the budget
		return nil
	})
	st := driveHandler(t, h, svc.PreShutdown, 10*time.Second)
	if st.State != svc.StopPending || st.WaitHint != 300 {
		t.Errorf("answered pre-shutdown with %+v, want stop pending with a 300 ms hint", st)
	}
	if h.err == nil {
		t.Error("a stop cut short by the budget must say so")
	}
}

// A stop request waits for the supervisor, whose own stop timeout bounds
// it, and says so in the wait hint.
func TestStopWaitsForTheSupervisor(t *testing.T) {
	h, _ := testHandler(func(ctx context.Context, _ *Notifications) error {
		<-ctx.Done()
		return nil
	})
	st := driveHandler(t, h, svc.Stop, 10*time.Second)
	if st.State != svc.StopPending || st.WaitHint != 90000 {
		t.Errorf("answered stop with %+v, want stop pending with the stop timeout as hint", st)
	}
	if h.err != nil {
		t.Errorf("a clean stop reported %v", h.err)
	}
}

// driveHandler runs h.Execute on fake channels, reports READY=1, sends
// cmd once the service is running, and returns the status it answered
// with, failing unless Execute returns within limit.
func driveHandler(t *testing.T, h *handler, cmd svc.Cmd, limit time.Duration) svc.Status {
	t.Helper()
	reqs := make(chan svc.ChangeRequest)
	status := make(chan svc.Status, 64)
	done := make(chan struct{})
	go func() {
		h.Execute(nil, reqs, status)
		close(done)
	}()
	if st := nextStatus(t, status, false); st.State != svc.StartPending {
		t.Fatalf("first status %+v", st)
	}
	h.note.Notify("READY=1")
	if st := nextStatus(t, status, false); st.State != svc.Running || st.Accepts&svc.AcceptPreShutdown == 0 || st.Accepts&svc.AcceptStop == 0 {
		t.Fatalf("running status %+v does not accept stop and pre-shutdown", st)
	}
	reqs <- svc.ChangeRequest{Cmd: cmd}
	st := nextStatus(t, status, false)
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("Execute did not return within %v of %v", limit, cmd)
	}
	return st
}

// The installing user's ACE grants start, stop and query, and nothing
// that would let them change or delete the service.
func TestServiceDACL(t *testing.T) {
	sid, err := ctlsock.CurrentUserSID()
	if err != nil {
		t.Fatal(err)
	}
	sd, err := windows.SecurityDescriptorFromString(serviceSDDL(sid))
	if err != nil {
		t.Fatal(err)
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		t.Fatal(err)
	}
	user, err := windows.StringToSid(sid)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for i := range uint32(dacl.AceCount) {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			t.Fatal(err)
		}
		aceSID := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
		if !aceSID.Equals(user) {
			continue
		}
		found = true
		need := uint32(windows.SERVICE_START | windows.SERVICE_STOP | windows.SERVICE_QUERY_STATUS)
		deny := uint32(windows.SERVICE_CHANGE_CONFIG | windows.DELETE | windows.WRITE_DAC | windows.WRITE_OWNER)
		if uint32(ace.Mask)&need != need || uint32(ace.Mask)&deny != 0 {
			t.Errorf("installer ACE mask %#x: want %#x set and %#x clear", ace.Mask, need, deny)
		}
	}
	if !found {
		t.Errorf("no ACE for the installer %s in %s", sid, serviceSDDL(sid))
	}
}

// Two profiles of one root installed side by side are two services,
// hermes-supervisor-work and hermes-supervisor-family (as Hermes names its
// own Hermes_Gateway_<profile> tasks), each with its own home on its
// command line, its own supervisor and its own event log source; the
// root's plain hermes-supervisor is not touched. Stopping or uninstalling
// one leaves the other running.
func TestSCMProfilesSideBySide(t *testing.T) {
	exe := os.Getenv(exeEnv)
	if exe == "" {
		t.Skip(exeEnv + " is not set: `make wine-test` (or a Windows CI job) sets it")
	}
	dir := testdir.New(t)
	ctx := context.Background()
	run := func(context.Context, []string) error { return nil }
	if err := withService(Name, windows.SERVICE_QUERY_STATUS, func(*mgr.Service) error { return nil }); err == nil {
		t.Fatalf("a service %s is installed before the test: remove it first", Name)
	}
	profiles := []string{"work", "family"}
	byProfile := map[string]Config{}
	for _, p := range profiles {
		home := filepath.Join(dir, "hermes", "profiles", p)
		// A lock dir each: profiles share Hermes' lock dir, but the demo
		// gateways would share its one bot token there, and the second
		// would be refused as Hermes refuses a token in use.
		c := Config{Exe: exe, Home: home, Suffix: lockstore.ServiceSuffix(home), LockDir: filepath.Join(dir, "locks-"+p),
			StopTimeout: 10 * time.Second, Demo: true, Wait: time.Minute, Password: testPassword(t)}
		if c.Suffix != p {
			t.Fatalf("ServiceSuffix(%s) = %q, want %q", home, c.Suffix, p)
		}
		plan, err := SCM{}.Install(c, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if p, err := (SCM{}).Uninstall(c); err == nil {
				_ = p.Apply(ctx, run)
			}
		})
		if err := plan.Apply(ctx, run); err != nil {
			t.Fatalf("install %s: %v", p, err)
		}
		byProfile[p] = c
	}
	if err := withService(Name, windows.SERVICE_QUERY_STATUS, func(*mgr.Service) error { return nil }); err == nil {
		t.Errorf("a profile's install created the root home's service %s", Name)
	}
	for _, p := range profiles {
		c, name := byProfile[p], Name+"-"+p
		defs := SCM{}.Installed(c)
		if len(defs) != 1 || defs[0] != (Definition{System: true, Home: c.Home, Path: name}) {
			t.Errorf("Installed(%s) = %+v, want the service %s of %s", p, defs, name, c.Home)
		}
		err := withService(name, windows.SERVICE_QUERY_CONFIG, func(s *mgr.Service) error {
			bin, err := binaryPath(s.Handle)
			if err != nil {
				return err
			}
			args, err := windows.DecomposeCommandLine(bin)
			if err != nil {
				return err
			}
			if i := slices.Index(args, "--home"); i < 0 || i+1 >= len(args) || args[i+1] != c.Home || !slices.Contains(args, "--service") {
				t.Errorf("service %s runs %q, want --service with --home %s", name, args, c.Home)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("service %s: %v", name, err)
		}
		if st := serviceState(t, name); st != svc.Running {
			t.Errorf("service %s is in state %d after install waited for it, want running", name, st)
		}
		waitState(t, c, "running")
	}
	// Each registered its own event log source, where the service manager
	// keeps them (Wine's too); a failed registration is a step that may fail.
	source := func(name string) bool {
		k, err := registry.OpenKey(registry.LOCAL_MACHINE, `SYSTEM\CurrentControlSet\Services\EventLog\Application\`+name, registry.QUERY_VALUE)
		if err == nil {
			k.Close()
		}
		return err == nil
	}
	for _, p := range profiles {
		if !source(Name + "-" + p) {
			t.Errorf("no event log source %s-%s after its install", Name, p)
		}
	}

	work, family := byProfile["work"], byProfile["family"]
	stop, _ := SCM{}.Control(work, "stop")
	if err := stop.Apply(ctx, run); err != nil {
		t.Fatal(err)
	}
	if st := serviceState(t, Name+"-work"); st != svc.Stopped {
		t.Errorf("work's service is in state %d after its stop", st)
	}
	if st := serviceState(t, Name+"-family"); st != svc.Running {
		t.Errorf("family's service is in state %d after work's stop, want running", st)
	}
	start, _ := SCM{}.Control(work, "start")
	if err := start.Apply(ctx, run); err != nil {
		t.Fatal(err)
	}
	waitState(t, work, "running")

	un, _ := SCM{}.Uninstall(work)
	if err := un.Apply(ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := withService(Name+"-work", windows.SERVICE_QUERY_STATUS, func(*mgr.Service) error { return nil }); err == nil {
		t.Error("work's service is still installed after its uninstall")
	}
	if source(Name + "-work") {
		t.Error("work's event log source is still registered after its uninstall")
	}
	if defs := (SCM{}).Installed(family); len(defs) != 1 || defs[0].Home != family.Home {
		t.Errorf("Installed(family) = %+v after work's uninstall", defs)
	}
	if st := serviceState(t, Name+"-family"); st != svc.Running {
		t.Errorf("family's service is in state %d after work's uninstall, want running", st)
	}
	if !source(Name + "-family") {
		t.Error("work's uninstall removed family's event log source")
	}
	waitState(t, family, "running")
}

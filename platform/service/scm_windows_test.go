package service

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"

	"github.com/hermes-agent/hermes-supervisor/internal/testdir"
	"github.com/hermes-agent/hermes-supervisor/platform"
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

// stubGateway records how it was started in $HERMES_HOME\stub-ran and
// runs until it is killed.
func stubGateway() {
	home := os.Getenv("HERMES_HOME")
	_ = os.MkdirAll(home, 0o700)
	b, _ := json.Marshal(map[string]any{"argv": os.Args, "path": os.Getenv("PATH")})
	_ = os.WriteFile(filepath.Join(home, "stub-ran"), b, 0o600)
	for {
		time.Sleep(time.Hour)
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

	err = withService(windows.SERVICE_QUERY_CONFIG, func(s *mgr.Service) error {
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
		if err != nil || len(acts) != len(Recovery) || acts[0].Type != mgr.ServiceRestart || acts[0].Delay != Recovery[0].Delay {
			t.Errorf("recovery actions %+v, %v; want %+v", acts, err, Recovery)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the installed service cannot be opened: %v", err)
	}

	if st := serviceState(t); st != svc.Running {
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
	if st := serviceState(t); st != svc.Stopped {
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
	if err := withService(windows.SERVICE_QUERY_STATUS, func(*mgr.Service) error { return nil }); err == nil {
		t.Fatal("the service is still installed after uninstall")
	}
}

// isWine reports whether the test runs under Wine.
func isWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}

func serviceState(t *testing.T) svc.State {
	t.Helper()
	var st svc.Status
	if err := withService(windows.SERVICE_QUERY_STATUS, func(s *mgr.Service) (err error) { st, err = s.Query(); return err }); err != nil {
		t.Fatal(err)
	}
	return st.State
}

// waitState asks the supervisor over its control pipe until it reports
// state, for up to a minute (Wine starts processes slowly).
func waitState(t *testing.T, c Config, state string) {
	t.Helper()
	addr := platform.ControlAddress(c.Home)
	var last string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := platform.DialControl(ctx, addr)
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
	c := Config{Exe: exe, Home: filepath.Join(dir, "home"), LockDir: filepath.Join(dir, "locks"), StopTimeout: 10 * time.Second,
		Command: argv, Path: path, Password: testPassword(t), Wait: time.Minute}
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
	// Polls with a deadline: the SCM reports a state change only when asked.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		b, err := os.ReadFile(mark)
		if err == nil && json.Unmarshal(b, &ran) == nil {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(c.Home, "hermes-supervisor.log"))
			t.Fatalf("the service never ran the stub %s; its log:\n%s", stub, log)
		}
	}
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

// A pre-shutdown request gives the gateway the short shutdown budget, not
// the stop timeout: Execute returns (and the job object ends the gateway)
// once the budget is spent, whatever the supervisor is still doing.
func TestPreShutdownBudget(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	h := &handler{stopWait: time.Minute, shutdownBudget: 300 * time.Millisecond, run: func(ctx context.Context) error {
		<-ctx.Done()
		<-release // a gateway slower than the budget
		return nil
	}}
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
	h := &handler{stopWait: 90 * time.Second, shutdownBudget: time.Millisecond, run: func(ctx context.Context) error {
		<-ctx.Done()
		return nil
	}}
	st := driveHandler(t, h, svc.Stop, 10*time.Second)
	if st.State != svc.StopPending || st.WaitHint != 90000 {
		t.Errorf("answered stop with %+v, want stop pending with the stop timeout as hint", st)
	}
	if h.err != nil {
		t.Errorf("a clean stop reported %v", h.err)
	}
}

// driveHandler runs h.Execute on fake channels, sends cmd once it runs,
// and returns the status it answered with, failing unless Execute returns
// within limit.
func driveHandler(t *testing.T, h *handler, cmd svc.Cmd, limit time.Duration) svc.Status {
	t.Helper()
	reqs := make(chan svc.ChangeRequest)
	status := make(chan svc.Status, 8)
	done := make(chan struct{})
	go func() {
		h.Execute(nil, reqs, status)
		close(done)
	}()
	if st := <-status; st.State != svc.StartPending {
		t.Fatalf("first status %+v", st)
	}
	if st := <-status; st.State != svc.Running || st.Accepts&svc.AcceptPreShutdown == 0 || st.Accepts&svc.AcceptStop == 0 {
		t.Fatalf("running status %+v does not accept stop and pre-shutdown", st)
	}
	reqs <- svc.ChangeRequest{Cmd: cmd}
	st := <-status
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
	sid, err := platform.CurrentUserSID()
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

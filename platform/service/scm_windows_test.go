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

// TestSCMLifeCycle installs the real binary as a service, sees its
// gateway run through the control pipe, stops, starts and uninstalls it.
func TestSCMLifeCycle(t *testing.T) {
	exe := os.Getenv(exeEnv)
	if exe == "" {
		t.Skip(exeEnv + " is not set: `make wine-test` (or a Windows CI job) sets it")
	}
	dir := testdir.New(t)
	c := Config{Exe: exe, Home: filepath.Join(dir, "home"), LockDir: filepath.Join(dir, "locks"), StopTimeout: 10 * time.Second, Demo: true,
		Wait: time.Minute} // install and start wait until the SCM reports it running
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

	err = withService(func(s *mgr.Service) error {
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
	if err := withService(func(*mgr.Service) error { return nil }); err == nil {
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
	if err := withService(func(s *mgr.Service) (err error) { st, err = s.Query(); return err }); err != nil {
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

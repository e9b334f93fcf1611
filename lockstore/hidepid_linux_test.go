package lockstore

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// The attack: on a /proc mounted with hidepid=2 another user's live
// process has no /proc entry for this user, neither in the listing nor
// by name, so reading /proc alone calls it dead and sweeps its lock.
// kill(pid, 0) still finds it (EPERM), and its files are kept.
//
// As root (CI) the test runs itself again as pid 1 of a pid and mount
// namespace of its own, whose /proc is a procfs of its own on any kernel
// (before 5.8 hidepid belonged to a pid namespace's procfs, so mounting
// the host's with it would change the host's /proc). There it mounts that
// /proc with hidepid=2, starts a live root process and writes lock dirs
// naming it, and runs itself a third time as nobody, who sweeps them: the
// hidden pid beside one dead pid, and among enough dead pids that the
// sweep judges them on several goroutines.
func TestHiddenProcessIsNotDead(t *testing.T) {
	switch os.Getenv("LOCKSTORE_HIDEPID") {
	case "namespace":
		hidepidNamespace(t)
		return
	case "sweep":
		hidepidSweep(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, to make a pid namespace and mount its /proc (CI runs as root)")
	}
	bin := testdir.OpenCopy(t, "lockstore.test")
	cmd := exec.Command(bin, "-test.run=^TestHiddenProcessIsNotDead$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "LOCKSTORE_HIDEPID=namespace")
	// Go makes the new mount namespace's mounts private before the exec,
	// so the /proc mounted in it is never seen outside.
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Count(string(out), "--- PASS: TestHiddenProcessIsNotDead") != 2 {
		t.Fatalf("in a pid namespace with hidepid=2: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// hidepidCases are the lock dirs swept: the hidden pid beside one dead
// pid, and among enough dead pids to be judged on several goroutines.
var hidepidCases = []struct {
	name string
	dead int
}{
	{"alone", 1},
	{"among-many", 4 * fileItems},
}

// hidepidNamespace is the second run: root, pid 1 of its own pid and
// mount namespaces, where it mounts /proc with hidepid=2, lays out the
// lock dirs and runs the sweep as nobody.
func hidepidNamespace(t *testing.T) {
	if os.Getpid() != 1 {
		t.Fatalf("pid %d: not in a pid namespace of its own", os.Getpid())
	}
	if err := syscall.Mount("proc", "/proc", "proc", 0, "hidepid=2"); err != nil {
		t.Fatalf("mount proc with hidepid=2: %v", err)
	}
	live := startProc(t, "block", true)
	dir := testdir.Open(t)
	for _, c := range hidepidCases {
		l := Layout{Home: filepath.Join(dir, c.name, "home"), LockDir: filepath.Join(dir, c.name, "locks")}
		for _, d := range []string{filepath.Dir(l.Home), l.Home, l.LockDir} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(d, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
		writeRecord(t, l.ScopedLock("telegram-bot-token", "hidden"), live, l.Home)
		for i := range c.dead {
			writeRecord(t, l.ScopedLock("signal-phone", strconv.Itoa(i)), deadIdentity(t), l.Home)
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHiddenProcessIsNotDead$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "LOCKSTORE_HIDEPID=sweep", "TMPDIR=/tmp",
		"LOCKSTORE_HIDEPID_DIR="+dir, "LOCKSTORE_HIDEPID_PID="+strconv.Itoa(live.PID))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestHiddenProcessIsNotDead") {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// hidepidSweep is the third run, as nobody under hidepid=2.
func hidepidSweep(t *testing.T) {
	pid, err := strconv.Atoi(os.Getenv("LOCKSTORE_HIDEPID_PID"))
	if err != nil {
		t.Fatal(err)
	}
	// Else the attack is not set up, and the test below proves nothing.
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("/proc/%d is visible to nobody under hidepid=2 (%v)", pid, err)
	}
	if err := unix.Kill(pid, 0); !errors.Is(err, unix.EPERM) {
		t.Fatalf("kill(%d, 0) as nobody: %v, want EPERM", pid, err)
	}
	dir := os.Getenv("LOCKSTORE_HIDEPID_DIR")
	for _, c := range hidepidCases {
		l := Layout{Home: filepath.Join(dir, c.name, "home"), LockDir: filepath.Join(dir, c.name, "locks")}
		s := New(l, prober, zaptest.NewLogger(t), time.Now)
		es, err := s.Sweep(context.Background(), false)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		hidden := l.ScopedLock("telegram-bot-token", "hidden")
		swept := 0
		for _, e := range es {
			switch {
			case e.Path == hidden && (e.Action != ActionKeep || e.Verdict != procstate.Unknown):
				t.Errorf("%s: the hidden live process's lock: %s/%s (%s), want unknown/keep", c.name, e.Verdict, e.Action, e.Reason)
			case e.Path != hidden && e.Action == ActionSwept:
				swept++
			}
		}
		if _, err := os.Lstat(hidden); err != nil {
			t.Errorf("%s: the hidden live process's lock is gone: %v", c.name, err)
		}
		// The dead pids' locks went, so nobody could have swept this one.
		if swept != c.dead {
			t.Errorf("%s: %d of %d dead pids' locks swept", c.name, swept, c.dead)
		}
	}
}

package lockstore

import (
	"context"
	"errors"
	"fmt"
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
// As root (CI) the test runs itself again in a mount namespace of its
// own, mounts such a /proc there, and from that runs itself a third time
// as nobody, who sweeps lock dirs it may write, naming a live root
// process: one pid looked up by name, and one among enough dead pids that
// the sweep lists /proc instead.
func TestHiddenProcessIsNotDead(t *testing.T) {
	switch os.Getenv("LOCKSTORE_HIDEPID") {
	case "mount":
		hidepidMount(t)
		return
	case "sweep":
		hidepidSweep(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, to mount a /proc with hidepid=2 (CI runs as root)")
	}
	if !procMountsOwnOptions(t) {
		// Before 5.8 hidepid belonged to the pid namespace's one procfs:
		// mounting it here would change the host's /proc.
		t.Skip("needs Linux 5.8 or later, where each /proc mount has its own hidepid")
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
	bin := testdir.OpenCopy(t, "lockstore.test")
	cmd := exec.Command(bin, "-test.run=^TestHiddenProcessIsNotDead$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "LOCKSTORE_HIDEPID=mount", "LOCKSTORE_HIDEPID_DIR="+dir,
		"LOCKSTORE_HIDEPID_PID="+strconv.Itoa(live.PID))
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Count(string(out), "--- PASS: TestHiddenProcessIsNotDead") != 2 {
		t.Fatalf("in a mount namespace with hidepid=2: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// hidepidCases are the lock dirs swept: the hidden pid looked up by name,
// and among pidTableMin dead pids, through the listing of /proc.
var hidepidCases = []struct {
	name string
	dead int
}{
	{"by-name", 1},
	{"listed", pidTableMin},
}

// hidepidMount is the second run: root in its own mount namespace (Go
// makes its mounts private), where it mounts /proc with hidepid=2 and runs
// the sweep as nobody.
func hidepidMount(t *testing.T) {
	if err := syscall.Mount("proc", "/proc", "proc", 0, "hidepid=2"); err != nil {
		t.Fatalf("mount proc with hidepid=2: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHiddenProcessIsNotDead$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "LOCKSTORE_HIDEPID=sweep", "TMPDIR=/tmp")
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

// procMountsOwnOptions reports a kernel of 5.8 or later, where each mount
// of procfs is an instance of its own with its own hidepid.
func procMountsOwnOptions(t *testing.T) bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor); err != nil {
		t.Fatalf("kernel release %q: %v", u.Release[:], err)
	}
	return major > 5 || major == 5 && minor >= 8
}

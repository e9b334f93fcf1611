package chaos

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/silentsock"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/syncbuf"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/ctlsock"
)

// throwawayUser creates a user with no home and no session (so no
// /run/user/<uid>, as for a system service without lingering), removed
// when t ends, and returns its uid.
func throwawayUser(t *testing.T, role string) uint32 {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "hsv" + role + hex.EncodeToString(b[:])
	if out, err := exec.Command("useradd", "-M", "-U", "-s", "/usr/sbin/nologin", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("userdel", name).CombinedOutput(); err != nil {
			t.Errorf("userdel %s: %v\n%s", name, err, out)
		}
	})
	out, err := exec.Command("id", "-u", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	uid, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(uid)
}

// asUserCmd runs argv as uid (its own group, no others), with setpriv.
func asUserCmd(uid uint32, argv ...string) *exec.Cmd {
	u := strconv.FormatUint(uint64(uid), 10)
	return exec.Command("setpriv", append([]string{"--reuid=" + u, "--regid=" + u, "--clear-groups", "--"}, argv...)...)
}

// TestSquattedControlDir: another user makes the victim's fixed fallback
// socket directory, /tmp/hermes-supervisor-<uid>, first, world-writable,
// and plants in it a link by the socket's name to a root-owned socket.
// The victim's home is too long for a socket in it and /run/user/<uid>
// does not exist. The supervisor used to refuse the directory and exit 1
// (no gateway, a restart loop under systemd); its clients followed the
// link, trusted the root peer and waited on an unrelated daemon. Now the
// supervisor listens at a private address of its own, its state file
// names it, and status and stop reach it; the root socket hears nothing.
func TestSquattedControlDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create the victim and attacker users (CI runs as root)")
	}
	victim, attacker := throwawayUser(t, "v"), throwawayUser(t, "a")
	v := strconv.FormatUint(uint64(victim), 10)
	base := testdir.Open(t)
	homeDir := filepath.Join(base, strings.Repeat("h", 90))
	// Run before userdel (cleanups run last first): a failed run must
	// leave no process of the victim's behind.
	t.Cleanup(func() {
		h := &home{Layout: lockstore.Layout{Home: homeDir}}
		for h.killAll(t); len(processesOf(homeDir, "run", demogateway.Command)) > 0; {
			runtime.Gosched()
		}
		// A killed supervisor leaves its fresh socket directory behind.
		left, _ := filepath.Glob("/tmp/hermes-supervisor-" + v + "-*")
		for _, d := range left {
			testdir.Remove(d)
		}
	})

	// A root daemon's socket anyone may connect to, counting who does.
	rootSock := filepath.Join(testdir.Open(t), "daemon.sock")
	heard := silentsock.Listen(t, rootSock)

	// A home of the victim's whose socket path would be too long.
	for _, d := range []string{homeDir, filepath.Join(base, "locks")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, int(victim), int(victim)); err != nil {
			t.Fatal(err)
		}
	}
	// The socket's name depends on the home alone; its directory, on the uid.
	name := filepath.Base(ctlsock.Address(homeDir))
	fixed := filepath.Join("/tmp", "hermes-supervisor-"+v)
	// The attack: the directory, then the link, both the attacker's.
	if out, err := asUserCmd(attacker, "mkdir", "-m", "777", fixed).CombinedOutput(); err != nil {
		t.Fatalf("attacker mkdir: %v\n%s", err, out)
	}
	t.Cleanup(func() { testdir.Remove(fixed) })
	link := filepath.Join(fixed, name)
	if out, err := asUserCmd(attacker, "ln", "-s", rootSock, link).CombinedOutput(); err != nil {
		t.Fatalf("attacker ln: %v\n%s", err, out)
	}

	// The binary must be the victim's to run.
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + base, "TMPDIR=/tmp", "XDG_RUNTIME_DIR=",
		"HERMES_HOME=" + homeDir, "HERMES_GATEWAY_LOCK_DIR=" + filepath.Join(base, "locks"), "GORACE=atexit_sleep_ms=0"}
	run := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: victim, Gid: victim}}
		return cmd
	}
	sup := &proc{cmd: run("run", "--demo"), out: &syncbuf.Buffer{}, done: make(chan struct{})}
	sup.cmd.Stdout, sup.cmd.Stderr = sup.out, sup.out
	if err := sup.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { sup.err = sup.cmd.Wait(); close(sup.done) }()
	t.Cleanup(func() { _ = sup.cmd.Process.Kill(); <-sup.done })

	// status reaches the supervisor itself, not the state file, not the daemon.
	deadline := time.Now().Add(30 * time.Second)
	var out []byte
	for {
		select {
		case <-sup.done:
			t.Fatalf("the victim's supervisor exited: %v\n%s", sup.err, sup.out)
		default:
		}
		out, _ = run("status").CombinedOutput()
		// The endpoint's own answer: running, and not marked (state-file).
		if strings.HasPrefix(string(out), "state:      running") && !strings.Contains(string(out), "state-file") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never answered from the endpoint:\n%s\nsupervisor:\n%s", out, sup.out)
		}
	}
	waitFor(t, "the supervisor saying where its control endpoint went", func() bool {
		return strings.Contains(sup.out.String(), "control endpoint")
	}, func() string { return sup.out.String() })
	stopOut, err := run("stop").CombinedOutput()
	if err != nil || !strings.Contains(string(stopOut), "stop: stopped") {
		t.Fatalf("stop: %v\n%s\nsupervisor:\n%s", err, stopOut, sup.out)
	}
	if code := sup.exited(t, 30*time.Second); code != 0 {
		t.Fatalf("supervisor exited %d:\n%s", code, sup.out)
	}
	if n := heard.Load(); n != 0 {
		t.Fatalf("the victim's clients connected %d times to the root socket the attacker's link names", n)
	}
}

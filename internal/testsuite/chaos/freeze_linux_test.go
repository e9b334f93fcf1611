package chaos

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

// freezerRoot is where the cgroup v1 freezer is mounted on the machines
// this runs on (CI's included): a task it freezes does not die of SIGKILL
// until it is thawed, which no other means gives a test so surely.
const freezerRoot = "/sys/fs/cgroup/freezer"

// freezers numbers the freezer cgroups of this test process.
var freezers atomic.Int64

// freeze moves pid into a freezer cgroup of the test's own and freezes it,
// waiting until the kernel says FROZEN. Cleanup thaws it, kills what is in
// it and removes it, even when the test failed. thaw is returned for the
// test to thaw it earlier.
func freeze(t *testing.T, pid int) (thaw func()) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(freezerRoot, "cgroup.procs")); err != nil {
		t.Fatalf("no cgroup v1 freezer at %s (%v): this test needs one to make a process SIGKILL cannot end; "+
			"mount it with `mkdir -p %s && mount -t cgroup -o freezer cgroup %s`", freezerRoot, err, freezerRoot, freezerRoot)
	}
	cg := filepath.Join(freezerRoot, fmt.Sprintf("hermes-chaos-%d-%d", os.Getpid(), freezers.Add(1)))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatalf("make a freezer cgroup: %v", err)
	}
	state := filepath.Join(cg, "freezer.state")
	thaw = func() {
		if err := os.WriteFile(state, []byte("THAWED"), 0); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("thaw %s: %v", cg, err)
		}
	}
	t.Cleanup(func() {
		thaw()
		deadline := time.Now().Add(30 * time.Second)
		for {
			b, err := os.ReadFile(filepath.Join(cg, "cgroup.procs"))
			if errors.Is(err, os.ErrNotExist) {
				return
			}
			for _, f := range strings.Fields(string(b)) {
				if p, err := strconv.Atoi(f); err == nil {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			}
			err = os.Remove(cg)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("freezer cgroup %s left behind: %v (holds %q)", cg, err, b)
				return
			}
			time.Sleep(10 * time.Millisecond) // the kernel lets killed tasks go asynchronously
		}
	})
	if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		t.Fatalf("move %d into %s: %v", pid, cg, err)
	}
	if err := os.WriteFile(state, []byte("FROZEN"), 0); err != nil {
		t.Fatalf("freeze %s: %v", cg, err)
	}
	waitFor(t, "the helper frozen", func() bool {
		b, err := os.ReadFile(state)
		return err == nil && strings.TrimSpace(string(b)) == "FROZEN"
	})
	return thaw
}

// TestStopNamesWhatItCannotKill gives `stop` a process of the gateway's
// tree that SIGKILL cannot end: the gateway (which ignores SIGTERM) has a
// helper, in its process group or in a session of its own, that the cgroup
// v1 freezer holds frozen. The stop must still complete within the stop
// timeout plus supervisor.KillGrace, fail, and say in the CLI's answer and
// in the log that it could not kill the helper, by pid, and why. Once
// thawed, the helper dies of the SIGKILL it was sent.
func TestStopNamesWhatItCannotKill(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root may freeze a process with the cgroup v1 freezer")
	}
	for _, role := range []string{"helper", "setsid"} {
		t.Run(role, func(t *testing.T) {
			h := newHome(t, "")
			log := filepath.Join(h.dir, "tree.log")
			if err := os.WriteFile(log, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			h.extraEnv = []string{treeEnv + "=" + role, treeLogEnv + "=" + log}
			const stopTimeout = 300 * time.Millisecond
			sup := h.start(t, "run", "--stop-timeout="+stopTimeout.String(), "--", os.Args[0])
			var tree []treeLine
			waitFor(t, "the gateway and its helper", func() bool {
				tree = readTreeLog(t, log)
				return len(tree) >= 2
			}, sup.out.String)
			gateway, helper := tree[0], tree[1]
			t.Cleanup(func() {
				for _, l := range tree {
					if sameProcess(l.pid, l.start) {
						_ = syscall.Kill(l.pid, syscall.SIGKILL)
					}
				}
			})
			thaw := freeze(t, helper.pid)

			// The client waits no longer than the stop may take, with a
			// margin for a loaded machine: an answer at all proves the
			// stop completed in time.
			timeout := stopTimeout + supervisor.KillGrace + 20*time.Second
			out, code := h.exec("stop", "--timeout="+timeout.String())
			why := regexp.MustCompile(`pid ` + strconv.Itoa(helper.pid) + ` "[^"]*": still runs after SIGKILL \(state D\)`)
			if code == 0 || !strings.Contains(out, "stop: completed, but could not kill ") || !why.MatchString(out) {
				t.Errorf("stop with a frozen helper %d: exit %d, want non-zero naming it with why it could not be killed:\n%s\nsupervisor:\n%s",
					helper.pid, code, out, sup.out)
			}
			sup.exited(t, 30*time.Second)
			logged := regexp.MustCompile(`could not kill a process of the gateway's tree.*"pid": ` + strconv.Itoa(helper.pid) + `\b.*"why": "still runs after SIGKILL \(state D\)`)
			if !logged.MatchString(sup.out.String()) {
				t.Errorf("the log does not name the frozen helper %d as not killed, with why:\n%s", helper.pid, sup.out)
			}
			if sameProcess(gateway.pid, gateway.start) {
				t.Errorf("the gateway %d survived the stop", gateway.pid)
			}
			if !sameProcess(helper.pid, helper.start) {
				t.Fatalf("the frozen helper %d died before it was thawed: the test proved nothing", helper.pid)
			}
			// Thawed, it dies of the SIGKILL it got while frozen.
			thaw()
			waitFor(t, "the thawed helper to die", func() bool { return !sameProcess(helper.pid, helper.start) })
		})
	}
}

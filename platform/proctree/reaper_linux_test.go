package proctree

import (
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOrphansListedAfresh reads the Reaper's one children descriptor as
// orphans come and go: each read must list the children as they are then,
// every one of them, not go on from where the read before stopped.
func TestOrphansListedAfresh(t *testing.T) {
	r, err := BecomeSubreaper()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.orphansOfOurs(); !ok {
		t.Fatalf("no children file: %v", r.kids.err)
	}
	// Killed at the end unless reaped: once reaped, a pid may be anyone's.
	unreaped := map[int]bool{}
	t.Cleanup(func() {
		for pid := range unreaped {
			reap(t, pid)
		}
	})
	a := orphan(t)
	unreaped[a] = true
	if got, _ := r.orphansOfOurs(); !slices.Contains(got, a) {
		t.Fatalf("the orphan %d is not listed: %v", a, got)
	}
	b := orphan(t)
	unreaped[b] = true
	if got, _ := r.orphansOfOurs(); !slices.Contains(got, a) || !slices.Contains(got, b) {
		t.Fatalf("orphans %d and %d, listed %v", a, b, got)
	}
	reap(t, a)
	delete(unreaped, a)
	if got, _ := r.orphansOfOurs(); slices.Contains(got, a) || !slices.Contains(got, b) {
		t.Fatalf("%d reaped and %d alive, listed %v", a, b, got)
	}
}

// orphan starts a sleep whose parent exits at once, so that it is
// re-parented to us, the subreaper, and returns its pid. It stays our
// unreaped child, its pid its own, until reap.
func orphan(t *testing.T) int {
	t.Helper()
	out, err := exec.Command("sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("sh said %q: %v", out, err)
	}
	return pid
}

// reap kills and reaps pid, an unreaped child of ours.
func reap(t *testing.T, pid int) {
	t.Helper()
	if err := unix.Kill(pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
}

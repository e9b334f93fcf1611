package supervisor

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLeaderGoneGroupSurvives: the recorded gateway's pid was taken by an
// unrelated process that made itself a group leader, forked and exited.
// The old code killed that orphaned group by number.
func TestLeaderGoneGroupSurvives(t *testing.T) {
	h := newHome(t)
	// Orphans come to us, so the member's end can be waited for.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Skipf("no subreaper: %v", err)
	}
	// Other tests wait for their grandchildren to vanish, not to be ours.
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
	cmd := exec.Command(os.Args[0], "fork-bystander-and-exit")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	member, _ := strconv.Atoi(strings.TrimSpace(line))
	t.Cleanup(func() { _ = syscall.Kill(member, syscall.SIGKILL) })
	leader := cmd.Process.Pid
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if pg, err := syscall.Getpgid(member); err != nil || pg != leader {
		t.Fatalf("member %d: group %d, %v; want %d", member, pg, err, leader)
	}
	_, hash := newNonce()
	start := int64(1)
	writeState(t, h.layout, &Status{State: Running, BootID: thisBoot(t), NonceHash: hash,
		Child: &Child{PID: leader, StartTime: &start, Argv: []string{"gateway"}, NonceHash: hash}})
	h.run(func(c *Config) {})
	h.waitReady()
	in.Close()
	var ws unix.WaitStatus
	if _, err := unix.Wait4(member, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		t.Fatalf("the orphaned group of a reused pid was signalled: %v", ws)
	}
}

// forkBystanderAndExit starts a sentinel in its own process group, prints
// its pid and exits: the group outlives its leader.
func forkBystanderAndExit() {
	c := exec.Command(os.Args[0], "bystander")
	c.Stdin = os.Stdin // the test's pipe: the member lives until the test closes it
	if err := c.Start(); err != nil {
		os.Exit(3)
	}
	os.Stdout.WriteString(strconv.Itoa(c.Process.Pid) + "\n")
	os.Exit(0)
}

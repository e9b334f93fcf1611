//go:build unix

package proctree

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// TestForeignKillTreeSpares kills a tree this process did not start as
// a Tree, sparing the descendant spare names (here the one that runs as
// another user, as a caller that may only signal its own user's would):
// the root and the other descendant die, the spared one is never signalled.
func TestForeignKillTreeSpares(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a child of another user's needs root to start")
	}
	bin := testdir.OpenCopy(t, "proctree.test")
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PLATFORM_HELPER=parent", "PLATFORM_NOBODY_TOO=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	r := bufio.NewReader(out)
	var pids [2]int
	for i := range pids {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the helper's pid %d: %v", i, err)
		}
		if pids[i], err = strconv.Atoi(strings.TrimSpace(line)); err != nil {
			t.Fatal(err)
		}
	}
	own, other := pids[0], pids[1]
	otherEntry, err := readProc(other)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p, err := os.FindProcess(other); err == nil {
			_ = p.Kill()
		}
	})
	ownEntry, err := readProc(own)
	if err != nil {
		t.Fatal(err)
	}
	f, err := OpenForeign(cmd.Process.Pid, func() bool { return true })
	if err != nil || f == nil {
		t.Fatalf("OpenForeign: %v, %v", f, err)
	}
	defer f.Close()
	killed, err := f.KillTree(func(pid int) bool { return pid == other })
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(killed, other) {
		t.Errorf("KillTree killed %v, the spared %d among them", killed, other)
	}
	<-done
	// The killed descendant, re-parented to us (TestMain made us a
	// subreaper), is a zombie once dead.
	h := openHandle(own)
	defer h.close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		p, err := readProc(own)
		if err != nil || p.start != ownEntry.start || p.state == 'Z' {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the descendant %d survived the kill", own)
		}
		awaitExit(ctx, []handle{h}, 5*time.Millisecond)
	}
	now, err := readProc(other)
	if err != nil || now.start != otherEntry.start || now.state == 'Z' {
		t.Errorf("the spared descendant %d is gone: %v, %v", other, now, err)
	}
	if now.state == 'T' {
		t.Errorf("the spared descendant %d was stopped", other)
	}
}

package proctree

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestHoldsHelper is not a test: with HOLDS_HELPER=parent it starts itself
// as a child, prints the child's pid and waits for stdin to close, as a
// console launcher waits for the gateway; with HOLDS_HELPER=child it waits
// for stdin to close.
func TestHoldsHelper(t *testing.T) {
	switch os.Getenv("HOLDS_HELPER") {
	case "parent":
		c := exec.Command(os.Args[0], "-test.run=^TestHoldsHelper$")
		c.Env = append(os.Environ(), "HOLDS_HELPER=child")
		in, err := c.StdinPipe()
		if err == nil {
			err = c.Start()
		}
		if err != nil {
			fmt.Println("0")
			os.Exit(3)
		}
		fmt.Println(c.Process.Pid)
		_, _ = io.Copy(io.Discard, os.Stdin)
		in.Close()
		_ = c.Wait()
		os.Exit(0)
	case "child":
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
}

// Holds finds the root's child in the tree (job object, process group),
// never a process outside it, and only when same agrees.
func TestHolds(t *testing.T) {
	start := func(t *testing.T, inTree bool) (pid int, tree *Tree, stop func()) {
		t.Helper()
		c := exec.Command(os.Args[0], "-test.run=^TestHoldsHelper$")
		c.Env = append(os.Environ(), "HOLDS_HELPER=parent")
		in, err := c.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if inTree {
			tree, err = Start(c, nil, nil)
		} else {
			err = c.Start()
		}
		if err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		pid, _ = strconv.Atoi(strings.TrimSpace(line))
		if pid <= 0 {
			t.Fatalf("helper printed %q", line)
		}
		return pid, tree, func() {
			in.Close()
			if tree != nil {
				_, _ = tree.Wait(context.Background())
			} else {
				_ = c.Wait()
			}
		}
	}
	grandchild, tree, stop := start(t, true)
	defer stop()
	outsider, _, stopOutsider := start(t, false)
	defer stopOutsider()
	yes := func() bool { return true }
	if !tree.Holds(grandchild, yes) {
		t.Errorf("the root's child %d is not found in the tree", grandchild)
	}
	if !tree.Holds(tree.Pid(), yes) {
		t.Errorf("the root %d is not found in the tree", tree.Pid())
	}
	if tree.Holds(outsider, yes) {
		t.Errorf("process %d, started outside the tree, is found in it", outsider)
	}
	if tree.Holds(grandchild, func() bool { return false }) {
		t.Error("Holds ignored same")
	}
	if tree.Holds(os.Getpid(), yes) {
		t.Error("the test itself is found in the tree")
	}
}

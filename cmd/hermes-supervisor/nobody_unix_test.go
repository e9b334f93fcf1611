//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// nobodyUID is the unprivileged user the root-only checks run as.
const nobodyUID = 65534

// nobody hermes-supervisor ARGS... runs the CLI as an unprivileged user:
// as uid 65534 when the test runs as root (as CI does), else as the test's
// own user, who is unprivileged already. So a check of what a normal user
// may not do runs everywhere, root included.
func cmdNobody(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 || args[0] != "hermes-supervisor" {
		ts.Fatalf("usage: [!] nobody hermes-supervisor ARGS...")
	}
	// testscript's own bin dir is private to root: run a copy of this test
	// binary, under the command's name, from a dir anyone may enter.
	dir, err := os.MkdirTemp("", "hermes-nobody")
	ts.Check(err)
	defer os.RemoveAll(dir)
	ts.Check(os.Chmod(dir, 0o755))
	exe, err := testdir.CopySelf(dir, "hermes-supervisor")
	ts.Check(err)
	cmd := exec.Command(exe, args[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin", "HOME=" + dir,
		"HERMES_HOME=" + filepath.Join(dir, "home"), "HERMES_GATEWAY_LOCK_DIR=" + filepath.Join(dir, "locks")}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyUID, Gid: nobodyUID}}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	_, _ = ts.Stdout().Write(stdout.Bytes())
	_, _ = ts.Stderr().Write(stderr.Bytes())
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		ts.Fatalf("nobody: %v", err)
	}
	if (err != nil) != neg {
		ts.Fatalf("nobody hermes-supervisor %v: unexpected exit: %v", args[1:], err)
	}
}

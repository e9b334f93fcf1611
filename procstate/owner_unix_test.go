//go:build unix

package procstate

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestOwner reads who a process runs as: this one, one started as nobody
// (as root only: nobody else may start it), and a reaped pid.
func TestOwner(t *testing.T) {
	p := NewProber(Options{})
	ctx := context.Background()
	got, err := p.Owner(ctx, os.Getpid())
	if want := (Owner{Real: os.Getuid(), Effective: os.Geteuid()}); err != nil || got != want {
		t.Errorf("Owner(self) = %v, %v; want %v", got, err, want)
	}
	if os.Geteuid() == 0 {
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		got, err := p.Owner(ctx, cmd.Process.Pid)
		if want := (Owner{Real: 65534, Effective: 65534}); err != nil || got != want {
			t.Errorf("Owner(a process of nobody) = %v, %v; want %v", got, err, want)
		}
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Owner(ctx, cmd.Process.Pid); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Owner(a reaped pid) = %v, want ErrNoProcess", err)
	}
}

package ctlsock

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// asUser runs the test binary as uid with the helper mode; the binary is
// copied where that user may execute it.
func asUser(t *testing.T, uid int, env ...string) *exec.Cmd {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run helpers as other users (CI runs as root)")
	}
	bin := testdir.OpenCopy(t, "platform.test")
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	return cmd
}

// TestSquattedSocket: another user binds the fallback address first. The
// old client took its lies ("running") as the supervisor's answer; the
// old server failed start-up with no word of who held it.
func TestSquattedSocket(t *testing.T) {
	const squatter, victim = 65534, 1 // nobody, daemon
	base := testdir.Open(t)
	// The squatter made the per-user dir first and left it writable.
	dir := filepath.Join(base, privateDirPrefix+"1")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, squatter, squatter); err != nil {
		t.Fatal(err)
	}
	addr := filepath.Join(dir, "x.sock")
	sq := asUser(t, squatter, "PLATFORM_HELPER=squat", "PLATFORM_ADDR="+addr)
	out, _ := sq.StdoutPipe()
	if err := sq.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sq.Process.Kill(); _ = sq.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "bound\n" {
		t.Fatalf("squatter: %q, %v", line, err)
	}
	if err := os.Chmod(addr, 0o777); err != nil {
		t.Fatal(err)
	}
	client := asUser(t, victim, "PLATFORM_HELPER=dial", "PLATFORM_ADDR="+addr)
	client.Stderr = os.Stderr
	err := client.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 5 {
		t.Fatalf("a client of uid %d took the squatter's socket: %v", victim, err)
	}
	// Root's own supervisor refuses the squatter's directory by name.
	if ln, err := Listen(addr); !errors.Is(err, safefs.ErrUnsafeDir) {
		if ln != nil {
			ln.Close()
		}
		t.Fatalf("listen in a squatted dir: %v", err)
	}
}

func TestListenControlRefusesSharedDirs(t *testing.T) {
	for _, mode := range []os.FileMode{0o777, 0o777 | os.ModeSticky, 0o775} {
		dir := filepath.Join(t.TempDir(), "d")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		if mode == 0o775 {
			// Group write counts when the group is not our own.
			if err := os.Chown(dir, -1, os.Getegid()+1); err != nil {
				t.Skipf("chown: %v", err)
			}
		}
		if ln, err := Listen(filepath.Join(dir, "s.sock")); !errors.Is(err, safefs.ErrUnsafeDir) {
			if ln != nil {
				ln.Close()
			}
			t.Errorf("mode %v: %v", mode, err)
		}
	}
	// The per-user fallback is made private when missing.
	addr := filepath.Join(t.TempDir(), privateDirPrefix+"x", "s.sock")
	ln, err := Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if fi, err := os.Lstat(filepath.Dir(addr)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("fallback dir: %v, %v", fi.Mode(), err)
	}
	// A connection of our own is accepted; peerUID reads us.
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			uid, perr := peerUID(c)
			if perr == nil && uid != os.Geteuid() {
				perr = errors.New("wrong peer uid")
			}
			err = perr
			c.Close()
		}
		done <- err
	}()
	c, err := net.Dial("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, c)
	c.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

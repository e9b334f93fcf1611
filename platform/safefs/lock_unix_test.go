//go:build unix

package safefs

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The test binary doubles as the other process that holds a lock.
func TestMain(m *testing.M) {
	if os.Getenv("PLATFORM_HELPER") == "lock" {
		f, err := os.OpenFile(os.Getenv("PLATFORM_LOCK"), os.O_RDWR|os.O_CREATE, 0o644)
		if err == nil {
			err = LockFile(f)
		}
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestLockFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "gateway.lock")
	a, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := LockFile(a); err != nil {
		t.Fatal(err)
	}
	b, _ := os.Open(p)
	defer b.Close()
	if err := LockFile(b); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open file: %v", err)
	}
	if err := UnlockFile(a); err != nil {
		t.Fatal(err)
	}
	if err := LockFile(b); err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	_ = UnlockFile(b)

	// Held by another process until it dies: the OS frees it.
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PLATFORM_HELPER=lock", "PLATFORM_LOCK="+p)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "locked\n" {
		t.Fatalf("holder said %q", line)
	}
	if err := LockFile(a); !errors.Is(err, ErrLocked) {
		t.Fatalf("lock held by a child: %v", err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if err := LockFile(a); err != nil {
		t.Fatalf("lock of a SIGKILLed holder: %v", err)
	}
}

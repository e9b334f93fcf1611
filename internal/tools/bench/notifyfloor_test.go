//go:build linux

package main

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestNotifyFloorDetectsAHang checks the floor does a hang detector's
// work: it hears a keep-alive, and exits 3 once no other comes within its
// deadline. A floor that heard nothing, or never judged, would be no floor.
func TestNotifyFloorDetectsAHang(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		// make test installs gcc (TEST_DEBS), so only a -short run on a
		// machine without one may go without this test.
		if testing.Short() {
			t.Skip("no C compiler (cc), and -short: the bench leaves the floor out too")
		}
		t.Fatal("no C compiler (cc): make test installs gcc; install it to test the bench's C floor")
	}
	ctx := context.Background()
	dir := t.TempDir()
	bin, _, err := buildNotifyFloor(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "n.sock")
	p, err := startNotifyFloor(ctx, bin, sock, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop()
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("WATCHDOG=1")); err != nil {
		t.Fatal(err)
	}
	if err := p.expect(ctx, "ready"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the floor is still running 10 s after the last keep-alive: it never judged the deadline")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 3 {
		t.Fatalf("the floor exited %d, want 3: a missed deadline", code)
	}
}

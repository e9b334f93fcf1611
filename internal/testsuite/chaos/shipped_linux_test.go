package chaos

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestShippedDemoSleepBlocks runs `demo-gateway -sleep` in a binary built
// as releases and cross builds are, without cgo: there no cgo thread and no
// goroutine of a test framework keeps the runtime from calling a bare
// select{} a deadlock. The grandchild of every -spawn-grandchild test must
// block until it is killed.
func TestShippedDemoSleepBlocks(t *testing.T) {
	shipped := filepath.Join(t.TempDir(), "hermes-supervisor")
	build := exec.Command("go", "build", "-o", shipped, "github.com/hermes-agent/hermes-supervisor/cmd/hermes-supervisor")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build without cgo: %v\n%s", err, out)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(shipped, "demo-gateway", "-sleep")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A whole other process's life is far longer than the runtime takes
	// to find a deadlock, which it does as soon as main parks.
	if out, err := exec.Command(shipped, "--version").CombinedOutput(); err != nil {
		t.Fatalf("--version: %v\n%s", err, out)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("demo-gateway -sleep already gone: %v\n%s", err, stderr.String())
	}
	err := cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL || strings.Contains(stderr.String(), "deadlock") {
		t.Fatalf("demo-gateway -sleep did not block until killed: %v\n%s", err, stderr.String())
	}
}

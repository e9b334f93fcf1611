//go:build unix

package testdir

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

func copySelf(dir, name string) (string, error) {
	exe := filepath.Join(dir, name)
	if out, err := exec.Command("cp", os.Args[0], exe).CombinedOutput(); err != nil {
		return "", fmt.Errorf("copy the test binary to %s: %w: %s", exe, err, out)
	}
	return exe, os.Chmod(exe, 0o755)
}

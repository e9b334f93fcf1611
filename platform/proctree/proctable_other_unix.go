//go:build unix && !linux && !darwin

package proctree

import (
	"errors"
	"fmt"
)

// readProcs: no process table reader here; the tree is its process group.
func readProcs() ([]procEntry, error) { return nil, errors.ErrUnsupported }

func readProc(pid int) (procEntry, error) {
	return procEntry{}, fmt.Errorf("pid %d: %w", pid, errors.ErrUnsupported)
}

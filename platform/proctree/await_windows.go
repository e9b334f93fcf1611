package proctree

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/windows"
)

func awaitProcess(ctx context.Context, pid int, same func() bool) error {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
		return nil // gone already
	}
	if err != nil {
		return fmt.Errorf("open process %d: %w", pid, err)
	}
	defer windows.CloseHandle(h)
	if !same() {
		return ErrNotSame
	}
	for ctx.Err() == nil {
		// Bounded, so that a cancelled ctx is seen within a second.
		ev, err := windows.WaitForSingleObject(h, 1000)
		if err != nil {
			return fmt.Errorf("wait for process %d: %w", pid, err)
		}
		if ev == windows.WAIT_OBJECT_0 {
			return nil
		}
	}
	return ctx.Err()
}

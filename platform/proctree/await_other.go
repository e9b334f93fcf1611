//go:build !linux && !windows

package proctree

import (
	"context"
	"errors"
)

// No handle here can be waited on for another process's exit.
func awaitProcess(context.Context, int, func() bool) error { return errors.ErrUnsupported }

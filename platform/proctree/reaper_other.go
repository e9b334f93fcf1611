//go:build !linux

package proctree

import (
	"context"
	"errors"
	"fmt"
)

// newReaper: only Linux has child subreapers (FreeBSD's reaper
// differs, macOS and Windows have none); the tree is then found by
// parent links and its process group (job object on Windows) alone.
func newReaper() (*Reaper, error) {
	return nil, fmt.Errorf("child subreapers exist only on Linux: %w", errors.ErrUnsupported)
}

func (*Reaper) reap() []Reaped { return nil }

func (*Reaper) run(context.Context, func(Reaped)) {}

// kidsFile: no children files here.
type kidsFile struct{}

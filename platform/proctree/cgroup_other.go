//go:build !linux

package proctree

import (
	"context"
	"errors"
	"fmt"
)

type cgroupsSys struct{}

// treeCgroup is never made off Linux: a Tree's cg is always nil there.
type treeCgroup struct{ dir string }

func delegatedCgroups(context.Context) (*Cgroups, error) {
	return nil, fmt.Errorf("%w: cgroups exist only on Linux: %w", ErrNoCgroup, errors.ErrUnsupported)
}

func (*treeCgroup) kill(context.Context) error { return nil }

func (*treeCgroup) members() ([]int, error) { return nil, nil }

func (*treeCgroup) empty(context.Context) error { return nil }

func (*treeCgroup) close() {}

package proctree

import (
	"context"
)

// AwaitExit waits until process pid, one this process did not start,
// exits, or ctx ends. It first takes a handle on pid (a pidfd on Linux, a
// process handle on Windows) and only then asks same whether pid is still
// the process the caller proved: a pid reused before the handle was taken
// is refused (false: ErrNotSame), and once held the handle follows that
// very process. It wraps errors.ErrUnsupported where no such handle
// exists (macOS, Linux before 5.3): callers then poll.
func AwaitExit(ctx context.Context, pid int, same func() bool) error {
	return awaitProcess(ctx, pid, same)
}

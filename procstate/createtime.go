package procstate

import (
	"context"
	"time"
)

// CreateTime returns when pid was created, as psutil's create_time reads
// it (the boot time plus the start ticks on Linux, the kernel's own
// stamp elsewhere): the clock Hermes' host-gateway.json records as
// createTime. It wraps ErrNoProcess or ErrPermission.
func (p *Prober) CreateTime(ctx context.Context, pid int) (time.Time, error) {
	if pid <= 0 {
		return time.Time{}, ErrNoProcess
	}
	ms, err := createTime(ctx, pid)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(ms), nil
}

//go:build !windows

package service

import (
	"context"
	"fmt"
	"time"
)

const supportsRunAsService = false

func runAsService(string, time.Duration, *Notifications, func(ctx context.Context) error) error {
	return fmt.Errorf("%w: run --service is for the Windows service manager; systemd and launchd run `hermes-supervisor run` as it is", ErrUnsupported)
}

// reportEvent: systemd and launchd keep the supervisor's stderr.
func reportEvent(string, string) {}

//go:build !windows

package service

import (
	"context"
	"fmt"
	"time"
)

// RunAsService refuses: systemd and launchd run `hermes-supervisor run`
// directly, and tell it to stop with SIGTERM.
func RunAsService(name string, _ time.Duration, _ *Notifications, _ func(ctx context.Context) error) error {
	return fmt.Errorf("%w: run --service is for the Windows service manager; systemd and launchd run `hermes-supervisor run` as it is", ErrUnsupported)
}

// SupportsRunAsService reports whether RunAsService can work here.
func SupportsRunAsService() bool { return false }

// reportEvent: systemd and launchd keep the supervisor's stderr.
func reportEvent(string, string) {}

// Password returns nothing: systemd and launchd run the service as its
// user without a password.
func Password(func(string) string) (string, error) { return "", nil }

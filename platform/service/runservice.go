package service

import (
	"context"
	"time"
)

// RunAsService runs run as the Windows service name, under the service
// control manager: run's context ends when the SCM asks the service to stop
// (or the machine shuts down); stopTimeout, the supervisor's own, plus the
// same grace the other managers get, is the hint for how long that takes.
// The service is StartPending until note says READY=1, that is until the
// gateway is ready (see Notifications), so that the SCM's Running, and
// `install --wait`, mean what systemd's active means. This is an explicit
// path (run --service) rather than detection, which fails under Wine,
// where services run outside session 0. Elsewhere it fails with
// ErrUnsupported: systemd and launchd run `hermes-supervisor run` as it
// is, and tell it to stop with SIGTERM.
func RunAsService(name string, stopTimeout time.Duration, note *Notifications, run func(ctx context.Context) error) error {
	return runAsService(name, stopTimeout, note, run)
}

// SupportsRunAsService reports whether RunAsService can work here: on
// Windows only.
func SupportsRunAsService() bool { return supportsRunAsService }

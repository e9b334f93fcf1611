// Package sdnotify speaks systemd's notify protocol: to the service manager
// that started us, and as a listener for the gateway's readiness and
// keep-alives.
package sdnotify

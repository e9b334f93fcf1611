package service

import (
	"strings"
	"sync"
)

// Notifications carries the supervisor's own sd_notify-style reports to
// the Windows service handler (RunAsService), which has no NOTIFY_SOCKET
// to read them from: READY=1, sent once the gateway is really ready, makes
// the service control manager's state Running, as it makes systemd's unit
// active; STOPPING=1, a stop the supervisor began itself, makes it
// StopPending. Its Notify goes into supervisor.Config.Notify, next to the
// systemd one; it never blocks the supervisor's loop.
type Notifications struct {
	ready, stopping         chan struct{}
	readyOnce, stoppingOnce sync.Once
}

// NewNotifications returns notifications nothing was reported to yet.
func NewNotifications() *Notifications {
	return &Notifications{ready: make(chan struct{}), stopping: make(chan struct{})}
}

// Notify takes one sd_notify message (newline-separated assignments);
// fields other than READY=1 and STOPPING=1 are ignored.
func (n *Notifications) Notify(state string) {
	for line := range strings.SplitSeq(state, "\n") {
		switch line {
		case "READY=1":
			n.readyOnce.Do(func() { close(n.ready) })
		case "STOPPING=1":
			n.stoppingOnce.Do(func() { close(n.stopping) })
		}
	}
}

// Ready is closed once READY=1 was reported.
func (n *Notifications) Ready() <-chan struct{} { return n.ready }

// Stopping is closed once STOPPING=1 was reported.
func (n *Notifications) Stopping() <-chan struct{} { return n.stopping }

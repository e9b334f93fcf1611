package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/eventlog"

	"github.com/hermes-agent/hermes-supervisor/platform/termtext"
)

func runAsService(name string, stopTimeout time.Duration, note *Notifications, run func(ctx context.Context) error) error {
	h := &handler{run: run, note: note, stopWait: stopTimeout + stopGrace, shutdownBudget: shutdownBudget,
		checkpointEvery: checkpointEvery, startWaitHint: startWaitHint, crash: crash}
	if err := svc.Run(name, h); err != nil {
		return fmt.Errorf("run as service %s: %w", name, err)
	}
	return h.err
}

// While the service is StartPending it raises its CheckPoint every
// checkpointEvery and promises the next raise within startWaitHint: a
// checkpoint that stops moving for longer than the hint is how the SCM and
// service tools tell a hung start from a slow one. The supervisor's ready
// timeout (60 s by default, or the gateway's EXTEND_TIMEOUT_USEC) bounds
// how long the start stays pending.
const (
	checkpointEvery = 3 * time.Second
	startWaitHint   = 10 * time.Second
)

type handler struct {
	run  func(ctx context.Context) error
	note *Notifications
	// stopWait is the wait hint of a stop: the supervisor's stop timeout
	// and a grace.
	stopWait time.Duration
	// shutdownBudget bounds a stop at system shutdown: Windows waits no
	// longer for a pre-shutdown service, and when Execute returns the
	// process exits and the job object ends the gateway's tree.
	shutdownBudget                 time.Duration
	checkpointEvery, startWaitHint time.Duration
	// crash ends the process after run failed (see crash); tests record.
	crash func(error)
	err   error
}

// crash ends the process without reporting SERVICE_STOPPED: that is what
// the SCM counts as a crash, and recovers from with the recovery actions
// on every Windows version.
func crash(err error) {
	fmt.Fprintln(os.Stderr, "hermes-supervisor:", termtext.Line(err.Error()))
	os.Exit(1)
}

// accepts is every control the service takes, in StartPending as in
// Running: a stop before the gateway is ready must work, and with the
// SCM's own Stop refused, nothing could end a start that never becomes
// ready short of killing the process.
const accepts = svc.AcceptStop | svc.AcceptShutdown | svc.AcceptPreShutdown

func (h *handler) Execute(_ []string, reqs <-chan svc.ChangeRequest, status chan<- svc.Status) (bool, uint32) {
	pending := svc.Status{State: svc.StartPending, Accepts: accepts, CheckPoint: 1, WaitHint: uint32(h.startWaitHint / time.Millisecond)}
	status <- pending
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.run(ctx) }()
	tick := time.NewTicker(h.checkpointEvery)
	defer tick.Stop()
	ticks, ready, stopping := tick.C, h.note.Ready(), h.note.Stopping()
	// stopPending ends the start: a ready gateway that a stop overtook
	// must not make the service Running again.
	stopPending := func(wait time.Duration) {
		ticks, ready, stopping = nil, nil, nil
		status <- svc.Status{State: svc.StopPending, WaitHint: uint32(wait / time.Millisecond)}
	}
	var budget <-chan time.Time
	for {
		select {
		case <-ticks:
			pending.CheckPoint++
			status <- pending
		case <-ready:
			ticks, ready = nil, nil
			tick.Stop()
			status <- svc.Status{State: svc.Running, Accepts: accepts}
		case <-stopping:
			// The supervisor stops on its own (a `stop` through its
			// control endpoint): the SCM sees the stop as it happens.
			stopPending(h.stopWait)
		case <-budget:
			h.err = errors.New("the gateway did not stop within the shutdown budget; its job object ends it")
			return false, 0
		case err := <-done:
			h.err = err
			if err != nil {
				h.crash(err)
				return false, 1 // reached in tests only
			}
			return false, 0
		case r := <-reqs:
			switch r.Cmd {
			case svc.Interrogate:
				status <- r.CurrentStatus
			case svc.Stop:
				stopPending(h.stopWait)
				cancel()
			case svc.PreShutdown, svc.Shutdown:
				// The machine goes down: the gateway gets the marker and a
				// short budget, not the full stop timeout.
				stopPending(h.shutdownBudget)
				cancel()
				if budget == nil {
					budget = time.After(h.shutdownBudget)
				}
			}
		}
	}
}

const supportsRunAsService = true

// reportEvent writes msg to the Application event log as the source name,
// the service's own (registered at install; an unregistered source still
// logs, with Windows' "description not found" preamble).
func reportEvent(name, msg string) {
	l, err := eventlog.Open(name)
	if err != nil {
		return
	}
	defer l.Close()
	_ = l.Error(1, msg)
}

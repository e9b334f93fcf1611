package service

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
)

// refusingService is Windows' SCM as Wine's is not: it refuses every
// control to a start-pending service (ERROR_SERVICE_CANNOT_ACCEPT_CTRL),
// and deletes a running service only by marking it.
type refusingService struct {
	state svc.State
	calls []string
}

func (f *refusingService) Control(svc.Cmd) (svc.Status, error) {
	f.calls = append(f.calls, "stop")
	switch f.state {
	case svc.StartPending:
		return svc.Status{State: svc.StartPending}, windows.ERROR_SERVICE_CANNOT_ACCEPT_CTRL
	case svc.Stopped:
		return svc.Status{State: svc.Stopped}, windows.ERROR_SERVICE_NOT_ACTIVE
	}
	f.state = svc.Stopped
	return svc.Status{State: svc.StopPending}, nil
}

func (f *refusingService) Query() (svc.Status, error) { return svc.Status{State: f.state}, nil }

func (f *refusingService) Delete() error {
	if f.state != svc.Stopped {
		f.calls = append(f.calls, "marked for deletion")
		return nil
	}
	f.calls = append(f.calls, "delete")
	return nil
}

// Uninstall of a service still starting (the SCM refuses its stop) asks
// the supervisor through its pipe, waits for the service to stop, and
// deletes it only then; never a delete that leaves it marked.
func TestUninstallWhileStartPending(t *testing.T) {
	for _, tt := range []struct {
		name      string
		state     svc.State
		pipe      func(f *refusingService) func(context.Context) error
		suffix    string // the profile whose service it is
		wantCalls []string
		wantErr   string
	}{
		{name: "running", state: svc.Running, wantCalls: []string{"stop", "delete"}},
		{name: "start pending, the pipe stops it", state: svc.StartPending,
			pipe: func(f *refusingService) func(context.Context) error {
				return func(context.Context) error { f.calls = append(f.calls, "pipe"); f.state = svc.Stopped; return nil }
			},
			wantCalls: []string{"stop", "pipe", "delete"}},
		{name: "start pending, stays so", state: svc.StartPending,
			pipe: func(f *refusingService) func(context.Context) error {
				return func(context.Context) error { f.calls = append(f.calls, "pipe"); return nil }
			},
			wantCalls: []string{"stop", "pipe"}, wantErr: "did not stop within"},
		{name: "start pending, no pipe", state: svc.StartPending, wantCalls: []string{"stop"}, wantErr: "run `hermes-supervisor stop`"},
		{name: "a profile's, start pending, stays so", state: svc.StartPending, suffix: "work",
			pipe: func(f *refusingService) func(context.Context) error {
				return func(context.Context) error { f.calls = append(f.calls, "pipe"); return nil }
			},
			wantCalls: []string{"stop", "pipe"}, wantErr: "service hermes-supervisor-work did not stop within"},
		{name: "a profile's, start pending, no pipe", state: svc.StartPending, suffix: "work", wantCalls: []string{"stop"}, wantErr: "run `hermes-supervisor -p work stop`"},
		{name: "stopped", state: svc.Stopped, wantCalls: []string{"stop", "delete"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &refusingService{state: tt.state}
			c := Config{Suffix: tt.suffix}
			if tt.pipe != nil {
				c.StopSupervisor = tt.pipe(f)
			}
			err := uninstallService(context.Background(), c, f, 300*time.Millisecond)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatal(err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("uninstall: %v, want an error saying %q", err, tt.wantErr)
			}
			if !slices.Equal(f.calls, tt.wantCalls) {
				t.Errorf("calls %q, want %q", f.calls, tt.wantCalls)
			}
		})
	}
}

// A reinstall over a service marked for deletion waits for it to go, and
// when it does not, says what holds it and what to do.
func TestReinstallOverAServiceMarkedForDelete(t *testing.T) {
	calls := 0
	err := waitMarkedForDelete(context.Background(), Name, 10*time.Second, func() error {
		if calls++; calls < 3 {
			return windows.ERROR_SERVICE_MARKED_FOR_DELETE
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("after the mark went: %v (%d tries)", err, calls)
	}
	err = waitMarkedForDelete(context.Background(), Name, time.Second, func() error { return windows.ERROR_SERVICE_MARKED_FOR_DELETE })
	if !errors.Is(err, ErrMarkedForDelete) || !errors.Is(err, windows.ERROR_SERVICE_MARKED_FOR_DELETE) || !strings.Contains(err.Error(), "services.msc") || !strings.Contains(err.Error(), "reboot") {
		t.Fatalf("a mark that stays: %v", err)
	}
	other := errors.New("access denied")
	if err := waitMarkedForDelete(context.Background(), Name, time.Second, func() error { return other }); !errors.Is(err, other) {
		t.Fatalf("another error: %v", err)
	}
}

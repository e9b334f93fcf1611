package proctree

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"

	"github.com/hermes-agent/hermes-supervisor/platform/signals"
	"golang.org/x/sys/unix"
)

func newReaper() (*Reaper, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	return &Reaper{roots: map[int]int{}}, nil
}

// reap runs under r.mu, so no root can be reaped by its Tree, and its pid
// handed to a new child of ours, between the read and the waitid: a pid
// that is our child and no root's is an orphan's, and stays so until we
// reap it (nobody else can).
func (r *Reaper) reap() []Reaped {
	procs, err := readProcs()
	if err != nil {
		return nil
	}
	var out []Reaped
	for _, e := range procs {
		if e.ppid != os.Getpid() || r.roots[e.pid] != 0 || e.state != 'Z' {
			continue
		}
		var ws unix.WaitStatus
		if got, err := unix.Wait4(e.pid, &ws, unix.WNOHANG, nil); err != nil || got != e.pid {
			continue
		}
		out = append(out, Reaped{PID: e.pid, Name: e.name, How: how(ws)})
	}
	return out
}

// how says how a reaped child ended.
func how(ws unix.WaitStatus) string {
	if ws.Signaled() {
		return "signal " + signals.Name(ws.Signal())
	}
	return "exit " + strconv.Itoa(ws.ExitStatus())
}

func (r *Reaper) run(ctx context.Context, reaped func(Reaped)) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, unix.SIGCHLD)
	defer signal.Stop(ch)
	for {
		for _, o := range r.Reap() {
			if reaped != nil {
				reaped(o)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}

//go:build unix

package proctree

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

type foreignSys struct {
	e procEntry
	h handle
}

func openForeign(pid int, use pinUse) (*Foreign, error) {
	h := openHandle(pid)
	e, err := readProc(pid)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		// No process table here: the pid alone, checked by kill(0).
		e = procEntry{pid: pid}
	case err != nil:
		h.close()
		return nil, nil
	}
	f := &Foreign{pid: pid, sys: foreignSys{e: e, h: h}}
	if !f.alive() {
		h.close()
		return nil, nil
	}
	if use == pinToWait && !h.waitable() {
		h.close()
		return nil, fmt.Errorf("wait for process %d: no pidfd: %w", pid, errors.ErrUnsupported)
	}
	return f, nil
}

// alive: unreaped and no zombie.
func (f *Foreign) alive() bool {
	if !f.sys.h.unreaped(f.sys.e) {
		return false
	}
	now, err := readProc(f.pid)
	return err != nil || now.state != 'Z'
}

func (f *Foreign) terminate() error {
	err := f.sys.h.signal(f.sys.e, unix.SIGTERM)
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("terminate process %d: %w", f.pid, err)
	}
	return nil
}

// foreignTick is how often wait looks again where the pin cannot be
// waited on (no pidfd): a stop takes Hermes' gateway seconds.
const foreignTick = 50 * time.Millisecond

// wait sleeps on the pidfd where there is one, else a tick at a time; the
// process is not our child, so nothing else tells of its exit.
func (f *Foreign) wait(ctx context.Context) error {
	for f.alive() {
		if ctx.Err() != nil {
			return fmt.Errorf("wait for process %d to exit: %w", f.pid, ctx.Err())
		}
		awaitExit(ctx, []handle{f.sys.h}, foreignTick)
	}
	return nil
}

// foreignMember is a descendant found and stopped.
type foreignMember struct {
	e procEntry
	h handle
}

func (f *Foreign) killTree(spare func(pid int) bool) ([]int, error) {
	root := f.sys.e
	// Stopped first: a stopped process cannot fork while its children
	// are looked for.
	_ = f.sys.h.signal(root, unix.SIGSTOP)
	members := map[int]*foreignMember{}
	defer func() {
		for _, m := range members {
			m.h.close()
		}
	}()
	for range foreignWalkRounds {
		procs, err := readProcs()
		if err != nil {
			break // no table (or unreadable): the root alone
		}
		grew := false
		for changed := true; changed; {
			changed = false
			for _, e := range procs {
				if members[e.pid] != nil || e.pid == f.pid || e.pid <= 1 || e.pid == unix.Getpid() {
					continue
				}
				var parent procEntry
				var ph handle
				switch {
				case e.ppid == f.pid:
					parent, ph = root, f.sys.h
				case members[e.ppid] != nil:
					parent, ph = members[e.ppid].e, members[e.ppid].h
				default:
					continue
				}
				h := openHandle(e.pid)
				now, err := readProc(e.pid)
				// Read after the child is pinned: its parent link is
				// current, and a parent that still holds its pid, and
				// started no later, is the one it names.
				if err != nil || now.start != e.start || now.ppid != parent.pid || now.start < parent.start || !ph.unreaped(parent) ||
					spare != nil && spare(now.pid) {
					h.close()
					continue
				}
				_ = h.signal(now, unix.SIGSTOP)
				members[now.pid] = &foreignMember{e: now, h: h}
				changed, grew = true, true
			}
		}
		if !grew {
			break
		}
	}
	var errs []error
	killed := []int{f.pid}
	if err := f.sys.h.signal(root, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
		errs = append(errs, fmt.Errorf("kill process %d: %w", f.pid, err))
	}
	for pid, m := range members {
		if err := m.h.signal(m.e, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("kill process %d, a descendant of %d: %w", pid, f.pid, err))
			continue
		}
		killed = append(killed, pid)
	}
	slices.Sort(killed)
	return killed, errors.Join(errs...)
}

func (f *Foreign) close() { f.sys.h.close() }

package proctree

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

type foreignSys struct {
	h       windows.Handle
	created int64 // creation time, in 100 ns units
}

// foreignAccess is what a pin to stop needs: to read the start time, wait,
// and terminate. Full query rights: Wine's GetProcessTimes wants them, and
// the caller's own processes grant them anyway. A pin to wait needs only
// SYNCHRONIZE, which a process of another account or a higher integrity
// level may grant where it refuses the rest.
const foreignAccess = windows.PROCESS_QUERY_INFORMATION | windows.PROCESS_TERMINATE | windows.SYNCHRONIZE

func openForeign(pid int, use pinUse) (*Foreign, error) {
	h, created, err := pinProcess(pid, use)
	if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
		return nil, nil // gone already
	}
	if err != nil {
		return nil, fmt.Errorf("open process %d: %w", pid, err)
	}
	f := &Foreign{pid: pid, sys: foreignSys{h: h, created: created}}
	if exited(h) {
		f.close()
		return nil, nil
	}
	return f, nil
}

// pinProcess opens pid: while the handle is open, the pid cannot be handed
// to another process. A pin to wait reads no creation time (0).
func pinProcess(pid int, use pinUse) (windows.Handle, int64, error) {
	access := uint32(foreignAccess)
	if use == pinToWait {
		access = windows.SYNCHRONIZE
	}
	h, err := windows.OpenProcess(access, false, uint32(pid))
	if err != nil || use == pinToWait {
		return h, 0, err
	}
	var c, e, k, u windows.Filetime
	if err := windows.GetProcessTimes(h, &c, &e, &k, &u); err != nil {
		windows.CloseHandle(h)
		return 0, 0, err
	}
	return h, c.Nanoseconds() / 100, nil
}

func exited(h windows.Handle) bool {
	ev, err := windows.WaitForSingleObject(h, 0)
	return err == nil && ev == windows.WAIT_OBJECT_0
}

func (f *Foreign) terminate() error { return nil }

// wait waits on the handle in slices of at most a second, ending at ctx's
// deadline, so that ctx is heard and no waiter outlives the handle.
func (f *Foreign) wait(ctx context.Context) error {
	for {
		slice := time.Second
		if d, ok := ctx.Deadline(); ok {
			slice = min(slice, max(time.Until(d), 0))
		}
		ev, err := windows.WaitForSingleObject(f.sys.h, uint32(slice.Milliseconds())+1)
		if err != nil {
			return fmt.Errorf("wait for process %d to exit: %w", f.pid, err)
		}
		if ev == windows.WAIT_OBJECT_0 {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("wait for process %d to exit: %w", f.pid, ctx.Err())
		}
	}
}

// killTree kills the root first (a dead process starts nothing), then
// walks the process snapshot for children of what it killed, pinning each
// and killing it, until a walk finds nothing new: a child started between
// two walks is found by the next.
func (f *Foreign) killTree(spare func(pid int) bool) ([]int, error) {
	var errs []error
	if err := windows.TerminateProcess(f.sys.h, 1); err != nil && !exited(f.sys.h) {
		return nil, fmt.Errorf("terminate process %d: %w", f.pid, err)
	}
	killed := []int{f.pid}
	parents := map[uint32]int64{uint32(f.pid): f.sys.created}
	var pins []windows.Handle
	defer func() {
		for _, h := range pins {
			windows.CloseHandle(h)
		}
	}()
	for range foreignWalkRounds {
		procs, err := snapshot()
		if err != nil {
			errs = append(errs, err)
			break
		}
		grew := false
		for changed := true; changed; {
			changed = false
			for _, p := range procs {
				pc, isChild := parents[p.ParentProcessID]
				if _, seen := parents[p.ProcessID]; !isChild || seen || p.ProcessID == 0 || int(p.ProcessID) == windows.Getpid() {
					continue
				}
				h, created, err := pinProcess(int(p.ProcessID), pinToStop)
				if err != nil {
					continue
				}
				// The parent is pinned (or was killed while pinned), so
				// its pid is its own; a child created before it names an
				// earlier owner of that pid.
				if created < pc || spare != nil && spare(int(p.ProcessID)) {
					windows.CloseHandle(h)
					continue
				}
				pins = append(pins, h)
				parents[p.ProcessID] = created
				changed, grew = true, true
				if err := windows.TerminateProcess(h, 1); err != nil && !exited(h) {
					errs = append(errs, fmt.Errorf("terminate process %d, a descendant of %d: %w", p.ProcessID, f.pid, err))
					continue
				}
				killed = append(killed, int(p.ProcessID))
			}
		}
		if !grew {
			break
		}
	}
	slices.Sort(killed)
	return killed, errors.Join(errs...)
}

// snapshot lists every process with its parent's pid.
func snapshot() ([]windows.ProcessEntry32, error) {
	s, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return nil, fmt.Errorf("snapshot the process table: %w", err)
	}
	defer windows.CloseHandle(s)
	var out []windows.ProcessEntry32
	e := windows.ProcessEntry32{Size: uint32(unsafe.Sizeof(windows.ProcessEntry32{}))}
	for err = windows.Process32First(s, &e); err == nil; err = windows.Process32Next(s, &e) {
		out = append(out, e)
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return nil, fmt.Errorf("read the process table: %w", err)
	}
	return out, nil
}

func (f *Foreign) close() {
	if f.sys.h != 0 {
		windows.CloseHandle(f.sys.h)
		f.sys.h = 0
	}
}

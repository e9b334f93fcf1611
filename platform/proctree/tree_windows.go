package proctree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

const membershipProvesOwnership = true

type treeSys struct {
	job windows.Handle
}

var (
	ntResumeProcess = windows.NewLazySystemDLL("ntdll.dll").NewProc("NtResumeProcess")
	// x/sys/windows has no IsProcessInJob.
	isProcessInJob = windows.NewLazySystemDLL("kernel32.dll").NewProc("IsProcessInJob")
)

// start creates the child suspended, puts it in a kill-on-close job object
// and only then lets it run, so no grandchild can escape the job. The job
// is to Windows what the cgroup is to Linux; in is always nil here.
func (t *Tree) start(*Cgroups) error {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return fmt.Errorf("create job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("configure job object: %w", err)
	}
	if t.cmd.SysProcAttr == nil {
		t.cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	t.cmd.SysProcAttr.CreationFlags |= windows.CREATE_SUSPENDED | windows.CREATE_NEW_PROCESS_GROUP
	if err := t.cmd.Start(); err != nil {
		windows.CloseHandle(job)
		return err
	}
	t.sys.job = job
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE|windows.PROCESS_SUSPEND_RESUME, false, uint32(t.cmd.Process.Pid))
	if err == nil {
		err = windows.AssignProcessToJobObject(job, h)
		if err == nil {
			if r, _, _ := ntResumeProcess.Call(uintptr(h)); r != 0 {
				err = fmt.Errorf("NtResumeProcess: status %#x", r)
			}
		}
		windows.CloseHandle(h)
	}
	if err != nil {
		_ = t.cmd.Process.Kill()
		_ = t.cmd.Wait()
		windows.CloseHandle(job)
		return fmt.Errorf("start %s in a job object: %w", t.cmd.Path, err)
	}
	return nil
}

// terminate does nothing on Windows: the gateway ignores console events
// when detached, so the planned-stop marker written before is the request.
func (t *Tree) terminate() error { return nil }

func (t *Tree) signalRoot(sig os.Signal) error {
	if sig != os.Kill {
		return fmt.Errorf("signal %v: %w", sig, errors.ErrUnsupported)
	}
	return t.cmd.Process.Kill()
}

func (t *Tree) killTree() error {
	if t.sys.job == 0 {
		return nil
	}
	if err := windows.TerminateJobObject(t.sys.job, 1); err != nil {
		return fmt.Errorf("terminate job object: %w", err)
	}
	return nil
}

// waitExited waits on a handle of the root; how it ended is left to the
// reap (known is false).
func (t *Tree) waitExited() (known bool, status error) {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(t.cmd.Process.Pid))
	if err != nil {
		return false, nil
	}
	defer windows.CloseHandle(h)
	_, _ = windows.WaitForSingleObject(h, windows.INFINITE)
	return false, nil
}

// holds asks the job object, holding a handle to pid: while it is open
// the pid cannot be handed to another process, so same judges the very
// process found in the job.
func (t *Tree) holds(pid int, same func() bool) bool {
	if t.sys.job == 0 {
		return false
	}
	// Limited information is what Windows documents as enough; Wine's
	// IsProcessInJob wants full query rights, which we have over our own
	// tree anyway.
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	var in int32 // BOOL
	if r, _, _ := isProcessInJob.Call(uintptr(h), uintptr(t.sys.job), uintptr(unsafe.Pointer(&in))); r == 0 || in == 0 {
		return false
	}
	return same()
}

// terminateMember: as for the root, the planned-stop marker is the request.
func (t *Tree) terminateMember(int) error { return nil }

func (t *Tree) release() {
	if t.sys.job != 0 {
		windows.CloseHandle(t.sys.job)
		t.sys.job = 0
	}
}

// killGroup kills the process pid: its tree died with the job object of
// the supervisor that started it, so the process is all that can be left.
func killGroup(pid int) error { return killProcess(pid) }

func killProcess(pid int) error {
	if err := refuse(pid); err != nil {
		return err
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		if errors.Is(err, os.ErrProcessDone) {
			return nil
		}
		return fmt.Errorf("kill process %d: %w", pid, err)
	}
	defer p.Release()
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill process %d: %w", pid, err)
	}
	return nil
}

// processGroup reports errors.ErrUnsupported on Windows, where a
// gateway's tree is a job object that dies with the supervisor that made it.
func processGroup(pid int) (int, error) { return 0, errors.ErrUnsupported }

// inLeadersGroup is false on Windows, which has no process groups: the
// job object holds the tree.
func inLeadersGroup(pid, leader int) bool { return false }

// survivors reports the root while it still runs: the job object took
// every other process of the tree with it.
func (t *Tree) survivors() []Unkilled {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(t.cmd.Process.Pid))
	if err != nil {
		return nil
	}
	defer windows.CloseHandle(h)
	if ev, _ := windows.WaitForSingleObject(h, 0); ev != uint32(windows.WAIT_TIMEOUT) {
		return nil
	}
	return []Unkilled{{PID: t.cmd.Process.Pid, Why: "still runs after TerminateJobObject"}}
}

// adopted: nothing escapes the job object to be found otherwise.
func (t *Tree) adopted() []int { return nil }

// awaitKilled: TerminateJobObject took every process of the job with it.
func (t *Tree) awaitKilled(func() context.Context) {}

package proctree

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// readProcs reads every process's kinfo_proc, the facts procstate reads
// for one pid.
func readProcs() ([]procEntry, error) {
	ks, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, fmt.Errorf("kern.proc.all: %w", err)
	}
	out := make([]procEntry, 0, len(ks))
	for i := range ks {
		out = append(out, kinfoEntry(&ks[i]))
	}
	return out, nil
}

// readProc reads pid's kinfo_proc.
func readProc(pid int) (procEntry, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	switch {
	case errors.Is(err, unix.EIO):
		// x/sys's word for an empty reply: no process has this pid.
		return procEntry{}, fmt.Errorf("pid %d: %w", pid, unix.ESRCH)
	case err != nil:
		return procEntry{}, fmt.Errorf("pid %d: %w", pid, err)
	case int(k.Proc.P_pid) != pid:
		return procEntry{}, fmt.Errorf("pid %d: kinfo_proc names pid %d: %w", pid, k.Proc.P_pid, unix.ESRCH)
	}
	return kinfoEntry(k), nil
}

func kinfoEntry(k *unix.KinfoProc) procEntry {
	tv := k.Proc.P_starttime
	st := byte('R')
	switch k.Proc.P_stat {
	case 4: // SSTOP
		st = 'T'
	case 5: // SZOMB
		st = 'Z'
	}
	return procEntry{
		pid: int(k.Proc.P_pid), ppid: int(k.Eproc.Ppid), pgid: int(k.Eproc.Pgid),
		start: uint64(tv.Sec)*1_000_000 + uint64(tv.Usec),
		name:  unix.ByteSliceToString(k.Proc.P_comm[:]), state: st,
	}
}

//go:build !windows

package proctree

// procEntry is what one process table read says of one process: enough to
// follow parent links and to know the process again by its start time.
type procEntry struct {
	pid, ppid, pgid int
	start           uint64 // in the OS's own unit: clock ticks since boot, µs since the epoch
	name            string // the kernel's short command name; untrusted
	state           byte   // 'Z' for a zombie where the OS says so, else what it says
}

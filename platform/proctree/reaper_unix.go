//go:build !windows

package proctree

import "os"

// adopted reports whether pid, a child of ours, is an orphan of a tree
// rather than a root.
func (r *Reaper) adopted(e procEntry) bool {
	if r == nil || e.ppid != os.Getpid() {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.roots[e.pid] == 0
}

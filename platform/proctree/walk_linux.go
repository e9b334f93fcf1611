package proctree

import "os"

// linked reads the processes a walk of the tree can admit, by following
// children lists (/proc/<pid>/task/*/children) down from the root, the
// members found so far and our own children that are no other Tree's
// root (orphans re-parented to us, the subreaper): every descendant of
// the root is among them, at any depth, since a descendant whose parent
// died is re-parented to us. A restart then reads a handful of files,
// not every process of the machine. ok is false without a Reaper (an
// orphan then goes to init, and only the root's process group finds it)
// or where the kernel keeps no children lists: walkTree reads the whole
// table instead. What it leaves out is a process outside the tree that
// joined the root's process group: the group kill still takes it, but it
// is not stopped first nor named if it survives.
func (t *Tree) linked() ([]procEntry, bool) {
	if t.reaper == nil {
		return nil, false
	}
	self, root := os.Getpid(), t.cmd.Process.Pid
	ours, ok := t.reaper.orphansOfOurs()
	if !ok {
		return nil, false
	}
	var queue []int
	if !t.sys.rootExited {
		// An exited root has neither threads nor children left to read.
		queue = append(queue, root)
	}
	for pid := range t.sys.members {
		queue = append(queue, pid)
	}
	for _, pid := range ours {
		if !t.reaper.isRoot(pid) {
			queue = append(queue, pid)
		}
	}
	buf := make([]byte, statMax)
	seen := map[int]bool{self: true}
	var out []procEntry
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		e, err := readProcInto(pid, buf)
		if err != nil {
			continue // gone
		}
		out = append(out, e)
		if kids, ok := childrenOf(pid); ok {
			queue = append(queue, kids...)
		}
	}
	return out, true
}

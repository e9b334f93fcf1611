//go:build unix && !linux

package proctree

// startIn starts the root; cgroups are Linux's, so in is always nil here.
func (t *Tree) startIn(*Cgroups) error { return t.cmd.Start() }

// inCgroup: no cgroups here.
func (*Tree) inCgroup(int) bool { return false }

//go:build unix && !linux

package proctree

// linked: no children lists here; walkTree reads the whole table.
func (t *Tree) linked() ([]procEntry, bool) { return nil, false }

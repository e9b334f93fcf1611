package main

import (
	"os"
	"strconv"
	"strings"
)

// orphanedGroup reports whether pid's process group is orphaned: no member
// has a parent in another group of the same session (POSIX), so the kernel
// discards SIGTSTP sent to it. Read from /proc/*/stat.
func orphanedGroup(pid int) bool {
	type ids struct{ ppid, pgrp, sid int }
	read := func(p string) (ids, bool) {
		b, err := os.ReadFile("/proc/" + p + "/stat")
		if err != nil {
			return ids{}, false
		}
		// After the command name, which may hold spaces and ")".
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		if i < 0 || len(f) < 4 {
			return ids{}, false
		}
		ppid, e1 := strconv.Atoi(f[1])
		pgrp, e2 := strconv.Atoi(f[2])
		sid, e3 := strconv.Atoi(f[3])
		return ids{ppid, pgrp, sid}, e1 == nil && e2 == nil && e3 == nil
	}
	me, ok := read(strconv.Itoa(pid))
	if !ok {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		m, ok := read(e.Name())
		if !ok || m.pgrp != me.pgrp {
			continue
		}
		if parent, ok := read(strconv.Itoa(m.ppid)); ok && parent.pgrp != me.pgrp && parent.sid == me.sid {
			return false
		}
	}
	return true
}

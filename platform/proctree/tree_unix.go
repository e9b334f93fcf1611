//go:build unix

package proctree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// treeSys holds what Kill found of the tree beyond its group.
type treeSys struct {
	// rootExited is set once Wait has seen the root exit: its threads are
	// all gone and its children re-parented, so a walk neither reads it
	// nor looks for its children, and it is nobody's survivor.
	rootExited bool
	members    map[int]*member
	// exitWatch is the pidfd Wait saw the root's exit through (Linux),
	// or nil; released with the members' handles.
	exitWatch *os.File
}

const membershipProvesOwnership = false

func (t *Tree) start(in *Cgroups) error {
	if t.cmd.SysProcAttr == nil {
		t.cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// A session of its own, not only a group: any process of a session may
	// join any group of that session, so a gateway left in ours would share
	// its group with whatever our terminal's shell starts. In its own session
	// only its descendants can join the group it leads (setsid makes it the
	// leader of both). It had no terminal to lose: its stdin is /dev/null and
	// its output our pipes, and a group not in the foreground never got the
	// terminal's signals anyway.
	t.cmd.SysProcAttr.Setsid = true
	t.cmd.SysProcAttr.Setpgid = false
	t.cmd.SysProcAttr.Pgid = 0
	return t.startIn(in)
}

// terminate asks the root to stop gracefully with SIGTERM.
func (t *Tree) terminate() error { return t.Signal(unix.SIGTERM) }

func (t *Tree) signalRoot(sig os.Signal) error {
	err := t.cmd.Process.Signal(sig)
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// killTree stops and kills the root, its process group and every process
// found by walkTree. The root is unreaped whenever this runs, so neither
// its pid nor its group id can have been handed to anyone else.
func (t *Tree) killTree() error {
	root := t.cmd.Process.Pid
	// Stopped first: a stopped process cannot fork while its children
	// are looked for.
	if !t.sys.rootExited {
		_ = unix.Kill(root, unix.SIGSTOP)
	}
	walkErr := t.walkTree()
	var errs []error
	// Members outside the root's group die first. The root leads a session
	// of its own, so a group in it whose members are stopped (as the walk
	// left them) and whose last parent in the session exits is orphaned:
	// the kernel then sends it SIGHUP and SIGCONT, a moment to run a
	// handler. A process whose SIGKILL is already pending runs none.
	errs = t.killMembers(errs, func(m *member) bool { return m.e.pgid != root })
	// A root whose every thread has exited is a zombie: a signal does
	// nothing to it, and Wait's kill, on the restart's path, skips it.
	if !t.sys.rootExited {
		if err := unix.Kill(root, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("kill process %d: %w", root, err))
		}
	}
	if err := unix.Kill(-root, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
		errs = append(errs, fmt.Errorf("kill process group %d: %w", root, err))
	}
	errs = t.killMembers(errs, func(m *member) bool { return m.e.pgid == root })
	if walkErr != nil {
		errs = append(errs, walkErr)
	}
	return errors.Join(errs...)
}

// killMembers SIGKILLs the members that pick selects and are not dead yet.
func (t *Tree) killMembers(errs []error, pick func(*member) bool) []error {
	for _, m := range t.sys.members {
		if m.dead || !pick(m) {
			continue
		}
		err := m.h.signal(m.e, unix.SIGKILL)
		switch {
		case errors.Is(err, unix.ESRCH):
			m.dead = true
		case err != nil:
			m.err = err
			errs = append(errs, fmt.Errorf("kill process %d (%q, %s): %w", m.e.pid, m.e.name, m.via, err))
		}
	}
	return errs
}

// member is a process of the tree found beyond the root.
type member struct {
	e    procEntry
	h    handle
	via  string // the proof it is of the tree
	err  error  // why SIGKILL failed
	dead bool
	// beyond is set when neither the cgroup nor the group would have held it.
	beyond bool
}

// maxWalkRounds bounds the walks of one kill: each round stops what it
// finds, so only a process found in the last round, forking before its
// SIGSTOP took effect, can have a child left to find.
const maxWalkRounds = 32

// walkTree finds, and stops, every process of the tree, by proof only:
// a parent link to the root or to a process already found, read after the
// child is pinned by its handle and while the parent still holds its pid;
// membership of the root's process group; or, with a Reaper, being a
// child of ours that is no tree's root (an orphan re-parented to us). A
// pid read from a file is never a start, and a pid whose start time
// changed between the read and the handle is left alone.
// With a Reaper it reads only the processes linked to the tree (see
// linked); else the whole process table.
func (t *Tree) walkTree() error {
	root, self := t.cmd.Process.Pid, os.Getpid()
	if t.sys.members == nil {
		t.sys.members = map[int]*member{}
	}
	for range maxWalkRounds {
		procs, ok := t.linked()
		var err error
		if !ok {
			procs, err = readProcs()
		}
		if errors.Is(err, errors.ErrUnsupported) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the process table for the tree of %d: %w", root, err)
		}
		children := map[int][]procEntry{}
		queue := []int{root}
		for pid := range t.sys.members {
			queue = append(queue, pid)
		}
		grew := false
		for _, e := range procs {
			children[e.ppid] = append(children[e.ppid], e)
			if t.known(e.pid, root, self) {
				continue
			}
			if e.pgid == root && t.admit(e, -1, "in the root's process group") ||
				t.reaper.adopted(e) && t.admit(e, self, "an orphan re-parented to the supervisor, its subreaper") {
				queue, grew = append(queue, e.pid), true
			}
		}
		for len(queue) > 0 {
			parent := queue[0]
			queue = queue[1:]
			for _, e := range children[parent] {
				if !t.known(e.pid, root, self) && t.admit(e, parent, "a child of "+strconv.Itoa(parent)) {
					queue, grew = append(queue, e.pid), true
				}
			}
		}
		if !grew && t.allStopped(procs) {
			return nil
		}
	}
	return nil
}

// allStopped reports whether the root and every member found, as procs
// saw them, is stopped or dead: SIGSTOP takes effect only once a process
// leaves the kernel, so one caught in fork still makes a child, which the
// next round finds.
func (t *Tree) allStopped(procs []procEntry) bool {
	root := t.cmd.Process.Pid
	for _, e := range procs {
		if e.pid != root && t.sys.members[e.pid] == nil {
			continue
		}
		if m := t.sys.members[e.pid]; m != nil && m.e.start != e.start {
			continue
		}
		switch e.state {
		case 'T', 't', 'Z', 'X', 'x':
		default:
			return false
		}
	}
	return true
}

func (t *Tree) known(pid, root, self int) bool {
	return pid == root || pid == self || pid <= 1 || t.sys.members[pid] != nil
}

// admit pins e by a handle, proves it is of the tree as via says, and
// stops it. parent is the pid whose child it must be, -1 for the group.
func (t *Tree) admit(e procEntry, parent int, via string) bool {
	root := t.cmd.Process.Pid
	h := openHandle(e.pid)
	now, err := readProc(e.pid)
	ok := err == nil && now.start == e.start && h.unreaped(now)
	switch {
	case !ok:
	case parent < 0:
		ok = now.pgid == root
	case parent == os.Getpid():
		ok = now.ppid == parent && t.reaper.adopted(now)
	case now.ppid != parent:
		ok = false
	case parent == root:
		// Our unreaped child: its pid is its own.
	default:
		// Read after the child's parent link: a parent that still holds
		// its pid now held it then.
		p := t.sys.members[parent]
		ok = p != nil && p.h.unreaped(p.e)
	}
	if !ok {
		h.close()
		return false
	}
	m := &member{e: now, h: h, via: via, beyond: now.pgid != root && !t.inCgroup(now.pid)}
	t.sys.members[now.pid] = m
	if err := h.signal(now, unix.SIGSTOP); errors.Is(err, unix.ESRCH) {
		m.dead = true
	}
	return true
}

// adopted lists the processes found beyond the group and the cgroup.
func (t *Tree) adopted() []int {
	var out []int
	for pid, m := range t.sys.members {
		if m.beyond {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out
}

// survivors: see Survivors. A member is alive while its handle still
// holds its pid and it is no zombie.
func (t *Tree) survivors() []Unkilled {
	var out []Unkilled
	root := t.cmd.Process.Pid
	if !t.sys.rootExited {
		if e, err := readProc(root); err == nil && !e.dead() {
			out = append(out, Unkilled{PID: root, Name: e.name, Why: "still runs after SIGKILL (state " + string(e.state) + ")"})
		}
	}
	pids := make([]int, 0, len(t.sys.members))
	for pid := range t.sys.members {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	for _, pid := range pids {
		m := t.sys.members[pid]
		if m.dead || !m.h.unreaped(m.e) {
			continue
		}
		now, err := readProc(pid)
		if err != nil || now.start != m.e.start || now.dead() {
			continue
		}
		why := "still runs after SIGKILL (state " + string(now.state) + ")"
		if m.err != nil {
			why = "SIGKILL failed: " + m.err.Error()
		}
		out = append(out, Unkilled{PID: pid, Name: now.name, Why: why + "; " + m.via})
	}
	return out
}

func (t *Tree) release() {
	for _, m := range t.sys.members {
		m.h.close()
	}
	t.sys.members = nil
	if t.sys.exitWatch != nil {
		_ = t.sys.exitWatch.Close()
		t.sys.exitWatch = nil
	}
}

// holds: the root is unreaped whenever this runs, so its group id is the
// tree's alone; same runs after the group check, and a pid that died in
// between fails it by its start time.
func (t *Tree) holds(pid int, same func() bool) bool {
	return inLeadersGroup(pid, t.cmd.Process.Pid) && same()
}

func (t *Tree) terminateMember(pid int) error {
	err := unix.Kill(pid, unix.SIGTERM)
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("terminate process %d: %w", pid, err)
	}
	return nil
}

func killGroup(pid int) error {
	if err := refuse(pid); err != nil {
		return err
	}
	target := pid
	pg, err := unix.Getpgid(pid)
	switch {
	case errors.Is(err, unix.ESRCH):
		return nil
	case err == nil && pg == pid && pg != unix.Getpgrp():
		// pid is alive and leads the group, so the group id cannot be
		// anyone else's: it is freed only once its leader is gone.
		target = -pid
	}
	err = unix.Kill(target, unix.SIGKILL)
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill %s %d: %w", map[bool]string{true: "process group", false: "process"}[target < 0], pid, err)
	}
	return nil
}

func killProcess(pid int) error {
	if err := refuse(pid); err != nil {
		return err
	}
	err := unix.Kill(pid, unix.SIGKILL)
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill process %d: %w", pid, err)
	}
	return nil
}

// processGroup returns the process group of pid. Every gateway the
// supervisor starts leads its own group; its helpers share it.
func processGroup(pid int) (int, error) {
	return unix.Getpgid(pid)
}

// inLeadersGroup: the session is checked as well as the group, so that a
// gateway that somehow shares a session (started by an older supervisor)
// still gives nothing to a process that joined its group from outside.
func inLeadersGroup(pid, leader int) bool {
	pg, err := unix.Getpgid(pid)
	if err != nil || pg != leader {
		return false
	}
	sid, err := unix.Getsid(pid)
	return err == nil && sid == leader
}

// awaitTick is how often awaitKilled looks again where no handle can be
// waited on: a killed process is gone within a few milliseconds.
const awaitTick = 20 * time.Millisecond

// awaitKilled waits, until the context bound gives ends, for every
// process the kills found to be gone (dead; a zombie is), so that
// survivors names only those SIGKILL could not end, not those still on
// their way out. bound is asked only when there is one to wait for.
func (t *Tree) awaitKilled(bound func() context.Context) {
	t.mu.Lock()
	var ms []*member
	for _, m := range t.sys.members {
		if !m.dead {
			ms = append(ms, m)
		}
	}
	t.mu.Unlock()
	// The members' handles stay open until release, after Wait's last
	// use of them; their entries are not written once found.
	var ctx context.Context
	for {
		ms = slices.DeleteFunc(ms, func(m *member) bool { return m.gone() })
		if len(ms) == 0 {
			return
		}
		if ctx == nil {
			ctx = bound()
		}
		if ctx.Err() != nil {
			return
		}
		hs := make([]handle, len(ms))
		for i, m := range ms {
			hs[i] = m.h
		}
		awaitExit(ctx, hs, awaitTick)
	}
}

// gone reports whether the member has died: reaped, a zombie, or its pid
// held by another process now.
func (m *member) gone() bool {
	if !m.h.unreaped(m.e) {
		return true
	}
	now, err := readProc(m.e.pid)
	return err != nil || now.start != m.e.start || now.dead()
}

// dead reports a process that has exited: a zombie, or one being reaped
// at this moment (X; x on kernels before 4.14).
func (e procEntry) dead() bool {
	return e.state == 'Z' || e.state == 'X' || e.state == 'x'
}

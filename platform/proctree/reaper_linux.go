package proctree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/signals"
	"golang.org/x/sys/unix"
)

func newReaper() (*Reaper, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	r := &Reaper{roots: map[int]int{}}
	r.kids.open()
	return r, nil
}

// reap finds our zombie children that are no Tree's root and reaps them.
// It reads the children list where the kernel puts our orphans (see
// orphansOfOurs), one file, and else the whole process table; either way without r.mu, so that a Tree's walk, which
// asks the Reaper about every process it reads, is not held up behind
// it. Only the waits run under r.mu: no root can then be reaped by its
// Tree, and its pid handed to a new child of ours, between the check and
// the waitid. A pid that is our child and no root's is an orphan's, and
// stays so until we reap it (nobody else can); a pid that was a zombie
// when read and is anything else now is not waitable, and WNOHANG leaves
// it.
func (r *Reaper) reap() []Reaped {
	var procs []procEntry
	if pids, ok := r.orphansOfOurs(); ok {
		buf := make([]byte, statMax)
		for _, pid := range pids {
			if e, err := readProcInto(pid, buf); err == nil {
				procs = append(procs, e)
			}
		}
	} else {
		var err error
		if procs, err = readProcs(); err != nil {
			return nil
		}
	}
	var out []Reaped
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range procs {
		if e.ppid != os.Getpid() || r.roots[e.pid] != 0 || e.state != 'Z' {
			continue
		}
		var ws unix.WaitStatus
		if got, err := unix.Wait4(e.pid, &ws, unix.WNOHANG, nil); err != nil || got != e.pid {
			continue
		}
		out = append(out, Reaped{PID: e.pid, Name: e.name, How: how(ws)})
	}
	return out
}

// orphansOfOurs lists the children on our main thread's children list,
// where the kernel puts every orphan re-parented to us: it hands an orphan
// to the first live thread of the subreaper's thread group, which is the
// group leader while the process runs (find_new_reaper, find_alive_thread),
// and Go never ends its main thread. A child we forked ourselves is listed
// under the thread that forked it, which may be any; those are Trees'
// roots, which their Trees know. One file, where listing every thread's
// took a directory read and a file per thread on every restart. ok is
// false where the kernel has no children files.
func (r *Reaper) orphansOfOurs() ([]int, bool) {
	b, err := r.kids.read(make([]byte, 4096))
	if err != nil {
		return nil, false
	}
	return appendChildren(nil, b), true
}

// kidsFile is our main thread's children file, opened once: opening a
// /proc file cost 25 to 70 µs here after the process had been idle for a
// while (a restart's tree walk opened it first thing after the gateway
// died), where reading it again through the open descriptor took 5 to
// 9 µs. A seq_file read at offset 0 lists the children anew. Reads take
// turns: a list longer than one read is read in parts, and another
// reader's read from offset 0 between them would start the list anew
// under the first reader's feet.
type kidsFile struct {
	mu  sync.Mutex
	fd  int // -1 until it is opened
	err error
}

// open opens the file; one that failed (too many open files) is tried
// again at the next read.
func (k *kidsFile) open() {
	pid := strconv.Itoa(os.Getpid())
	k.fd, k.err = unix.Open("/proc/"+pid+"/task/"+pid+"/children", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if k.err != nil {
		k.fd = -1
	}
}

// read reads the whole list into buf, growing it as needed, from offset
// 0 with pread.
func (k *kidsFile) read(buf []byte) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fd < 0 {
		k.open()
		if k.err != nil {
			return nil, k.err
		}
	}
	return preadAll(k.fd, buf)
}

// preadAll reads fd from offset 0 to its end into buf, growing it as
// needed; it leaves the descriptor's own offset alone.
func preadAll(fd int, buf []byte) ([]byte, error) {
	n := 0
	for {
		if n == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
		}
		m, err := unix.Pread(fd, buf[n:], int64(n))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			return buf[:n], nil
		}
		n += m
	}
}

// appendChildren appends the pids of a children file's text to out.
func appendChildren(out []int, b []byte) []int {
	for _, f := range strings.Fields(string(b)) {
		if c, err := strconv.Atoi(f); err == nil && c > 0 {
			out = append(out, c)
		}
	}
	return out
}

// childrenOf lists the children of process pid from each of its threads'
// children file; ok is false where the kernel has none (built without
// CONFIG_PROC_CHILDREN) or a list could not be read. The kernel reads
// each list under RCU: a child being added or removed at that moment may
// be missed (a walk stops what it finds, so a later round finds it); an
// exited child stays on the list until it is reaped.
func childrenOf(pid int) ([]int, bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	buf := make([]byte, 4096)
	tids, err := listDir(dir, buf)
	if err != nil {
		return nil, false
	}
	var out []int
	for _, tid := range tids {
		b, err := readSmall(dir+"/"+tid+"/children", buf)
		if errors.Is(err, unix.ENOENT) {
			if _, serr := os.Stat(dir + "/" + tid); serr == nil {
				return nil, false // no children files in this kernel
			}
			continue // the thread exited
		}
		if err != nil {
			return nil, false
		}
		out = appendChildren(out, b)
	}
	return out, true
}

// listDir lists the names in dir with raw system calls: os.Open would
// try, and fail, to add a /proc directory to the poller, five system calls
// more on every restart's walk of the tree.
func listDir(dir string, buf []byte) ([]string, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var names []string
	for {
		n, err := unix.ReadDirent(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

// readSmall reads a whole small /proc file into buf, growing it as
// needed.
func readSmall(path string, buf []byte) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return preadAll(fd, buf)
}

// how says how a reaped child ended.
func how(ws unix.WaitStatus) string {
	if ws.Signaled() {
		return "signal " + signals.Name(ws.Signal())
	}
	return "exit " + strconv.Itoa(ws.ExitStatus())
}

func (r *Reaper) run(ctx context.Context, reaped func(Reaped)) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, unix.SIGCHLD)
	defer signal.Stop(ch)
	for {
		for _, o := range r.Reap() {
			if reaped != nil {
				reaped(o)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
		// A gateway's exit is also a SIGCHLD, and its Tree walks these
		// same lists at once to kill what is left: reaping orphans
		// can wait until that walk and the restart after it are done,
		// and one pass then serves every SIGCHLD of the burst.
		t := time.NewTimer(reapSettle)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		select {
		case <-ch:
		default:
		}
	}
}

// isRoot reports whether pid is the root of a Tree started with r.
func (r *Reaper) isRoot(pid int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.roots[pid] != 0
}

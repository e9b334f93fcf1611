package proctree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

type cgroupsSys struct {
	path string // the delegated cgroup's path in the hierarchy, as /proc/<pid>/cgroup names it
	// Switches for tests, for what this kernel cannot be made to do: refuse
	// CLONE_INTO_CGROUP, or lack cgroup.kill (before 5.14).
	noClone3, noKillFile bool
}

// treeCgroup is the cgroup one tree runs in: created by us, under ours.
type treeCgroup struct {
	dir        string
	path       string // as /proc/<pid>/cgroup names it
	fd         int    // the directory, open for clone3; -1 once closed
	noKillFile bool
}

// enter moves pid, the supervisor, into the child "supervisor": systemd
// wants a delegated cgroup to be an inner node, holding no process itself
// (the kernel's no-internal-process rule once controllers are enabled).
// It also proves that we may create children and move processes here.
func (c *Cgroups) enter(pid int) error {
	dir := filepath.Join(c.dir, selfCgroupName)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create cgroup %s: %w", dir, err)
	}
	return addProc(dir, pid)
}

func addProc(dir string, pid int) error {
	f := filepath.Join(dir, "cgroup.procs")
	if err := os.WriteFile(f, []byte(strconv.Itoa(pid)), 0); err != nil {
		return fmt.Errorf("move pid %d into cgroup %s: %w", pid, dir, err)
	}
	return nil
}

// maxTreeCgroups bounds the names tried: only a cgroup that could not be
// emptied (a process stuck in the kernel) keeps its name taken.
const maxTreeCgroups = 64

// newTree creates a cgroup for one tree: "gateway", or "gateway-<n>" while
// an earlier one could not be removed. A name that exists is never used
// nor removed: it is not one we just made.
func (c *Cgroups) newTree() (*treeCgroup, error) {
	for i := 1; i <= maxTreeCgroups; i++ {
		name := "gateway"
		if i > 1 {
			name += "-" + strconv.Itoa(i)
		}
		dir := filepath.Join(c.dir, name)
		err := os.Mkdir(dir, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			_ = unix.Rmdir(dir)
			return nil, fmt.Errorf("open cgroup %s: %w", dir, err)
		}
		return &treeCgroup{dir: dir, path: c.sys.path + "/" + name, fd: fd, noKillFile: c.sys.noKillFile}, nil
	}
	return nil, fmt.Errorf("cgroups gateway to gateway-%d under %s all exist: earlier gateways' could not be emptied", maxTreeCgroups, c.dir)
}

// startIn starts the root straight into a new cgroup under in (clone3 with
// CLONE_INTO_CGROUP), so that it cannot fork before it is inside. Where
// clone3 refuses (a kernel before 5.7, a seccomp filter), it starts the
// root as usual and moves it in at once; what it forked in between stays
// outside, held by the process group alone.
func (t *Tree) startIn(in *Cgroups) error {
	if in == nil {
		return t.cmd.Start()
	}
	cg, err := in.newTree()
	if err != nil {
		t.cgErr = err
		return t.cmd.Start()
	}
	var refused error
	if !in.sys.noClone3 {
		attr := *t.cmd.SysProcAttr
		attr.UseCgroupFD, attr.CgroupFD = true, cg.fd
		t.cmd.SysProcAttr = &attr
		if refused = t.cmd.Start(); refused == nil {
			t.cg = cg
			return nil
		}
		// Either clone3 refused or the command cannot run at all: the
		// plain start below tells which, and its error is the one to report.
		t.cmd = restartable(t.cmd)
	}
	if err := t.cmd.Start(); err != nil {
		_ = cg.remove()
		cg.close()
		return err
	}
	if err := addProc(cg.dir, t.cmd.Process.Pid); err != nil {
		_ = cg.remove()
		cg.close()
		t.cgErr = err
		return nil
	}
	t.cg = cg
	if refused != nil {
		t.cgErr = fmt.Errorf("moved in after it started: clone3 into the cgroup: %w", refused)
	}
	return nil
}

// restartable copies what a Cmd runs into a new Cmd: exec refuses to Start
// one twice, even after a failed Start.
func restartable(c *exec.Cmd) *exec.Cmd {
	attr := *c.SysProcAttr
	attr.UseCgroupFD, attr.CgroupFD = false, 0
	return &exec.Cmd{Path: c.Path, Args: c.Args, Env: c.Env, Dir: c.Dir, Stdin: c.Stdin, Stdout: c.Stdout,
		Stderr: c.Stderr, ExtraFiles: c.ExtraFiles, SysProcAttr: &attr, WaitDelay: c.WaitDelay, Err: c.Err}
}

// kill kills every process in the cgroup and below: cgroup.kill, which the
// kernel applies to all of them at once, forks in progress included; on
// kernels before 5.14, killEach.
func (c *treeCgroup) kill(ctx context.Context) error {
	if !c.noKillFile {
		err := os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0)
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			return wrapCgroupErr("kill cgroup", c.dir, err)
		}
		if _, err := os.Stat(c.dir); errors.Is(err, fs.ErrNotExist) {
			return nil // already emptied and removed
		}
	}
	return c.killEach(ctx)
}

func wrapCgroupErr(what, dir string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s %s: %w", what, dir, err)
}

// killEach freezes the cgroup (so nothing in it can fork), kills each
// member, then thaws it. Each pid is opened as a pidfd and only then
// checked to be in the cgroup: the signal goes to the process checked,
// even if the pid is reused meanwhile.
func (c *treeCgroup) killEach(ctx context.Context) error {
	freeze := filepath.Join(c.dir, "cgroup.freeze")
	if os.WriteFile(freeze, []byte("1"), 0) == nil {
		defer func() { _ = os.WriteFile(freeze, []byte("0"), 0) }()
		_ = waitEvents(ctx, c.dir, func(ev map[string]string) bool { return ev["frozen"] == "1" || ev["populated"] == "0" }, nil)
	}
	pids, err := c.members()
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, pid := range pids {
		if err := c.killMember(pid); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *treeCgroup) killMember(pid int) error {
	if err := refuse(pid); err != nil {
		return err
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(fd)
	if !inCgroup(pid, c.path) {
		return nil
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill process %d of cgroup %s: %w", pid, c.dir, err)
	}
	return nil
}

// inCgroup reports whether pid's cgroup is path or below it.
func inCgroup(pid int, path string) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	got, err := ownCgroup(data)
	return err == nil && (got == path || strings.HasPrefix(got, path+"/"))
}

// members lists the processes in the cgroup and below it.
func (c *treeCgroup) members() ([]int, error) {
	var pids []int
	err := filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // emptied and removed meanwhile
			}
			return err
		}
		if d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ENODEV) {
			return err
		}
		for f := range strings.FieldsSeq(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids, wrapCgroupErr("list cgroup", c.dir, err)
}

// empty waits until nothing is left in the cgroup (cgroup.events says
// populated 0) or ctx ends, then removes it and whatever cgroups the
// tree made below it.
func (c *treeCgroup) empty(ctx context.Context) error {
	var again func()
	if c.noKillFile {
		// Without cgroup.kill, something may have escaped a round.
		again = func() { _ = c.killEach(ctx) }
	}
	if err := waitEvents(ctx, c.dir, func(ev map[string]string) bool { return ev["populated"] == "0" }, again); err != nil {
		return fmt.Errorf("cgroup %s still holds processes; left in place: %w", c.dir, err)
	}
	return c.remove()
}

// remove removes the cgroup, deepest first.
func (c *treeCgroup) remove() error {
	var dirs []string
	_ = filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := unix.Rmdir(dirs[i]); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("remove cgroup %s: %w", dirs[i], err)
		}
	}
	return nil
}

func (c *treeCgroup) close() {
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
}

// eventsPoll is the longest a cancelled context goes unnoticed while
// waiting; a change of cgroup.events wakes the wait at once.
const eventsPoll = 100 * time.Millisecond

// waitEvents waits until done holds for dir's cgroup.events, woken by
// inotify (the kernel signals every change of the file), until ctx ends.
// again, when set, runs after each look that found done false.
func waitEvents(ctx context.Context, dir string, done func(map[string]string) bool, again func()) error {
	in, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return fmt.Errorf("inotify: %w", err)
	}
	defer unix.Close(in)
	file := filepath.Join(dir, "cgroup.events")
	if _, err := unix.InotifyAddWatch(in, file, unix.IN_MODIFY); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil // the cgroup is gone: nothing is in it
		}
		return fmt.Errorf("watch %s: %w", file, err)
	}
	buf := make([]byte, 4096)
	for {
		data, err := os.ReadFile(file)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		ev := map[string]string{}
		for line := range strings.SplitSeq(string(data), "\n") {
			if k, v, ok := strings.Cut(line, " "); ok {
				ev[k] = v
			}
		}
		if done(ev) {
			return nil
		}
		if again != nil {
			again()
		}
		wait := eventsPoll
		if d, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(d))
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if wait <= 0 {
			return fmt.Errorf("wait for %s: %w", file, context.DeadlineExceeded)
		}
		fds := []unix.PollFd{{Fd: int32(in), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, int(max(wait.Milliseconds(), 1))); err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("wait for %s: %w", file, err)
		}
		for {
			if n, err := unix.Read(in, buf); n <= 0 || err != nil {
				break
			}
		}
	}
}

// inCgroup reports whether pid is in the tree's cgroup.
func (t *Tree) inCgroup(pid int) bool { return t.cg != nil && inCgroup(pid, t.cg.path) }

package proctree

import (
	"bytes"
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

// selfCgroupName is where the supervisor moves itself, beside its
// gateways' cgroups.
const selfCgroupName = "supervisor"

func delegatedCgroups(ctx context.Context) (*Cgroups, error) {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoCgroup, err)
	}
	path, err := ownCgroup(self)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoCgroup, err)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoCgroup, err)
	}
	dir, err := cgroupDir(mounts, path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoCgroup, err)
	}
	evidence, err := delegation(ctx, dir, path, os.Geteuid())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoCgroup, err)
	}
	c := &Cgroups{dir: dir, evidence: evidence, sys: cgroupsSys{path: path}}
	if err := c.enter(os.Getpid()); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoCgroup, err)
	}
	return c, nil
}

// ownCgroup reads our cgroup v2 path from /proc/self/cgroup ("0::/path").
func ownCgroup(data []byte) (string, error) {
	for line := range strings.SplitSeq(string(data), "\n") {
		path, ok := strings.CutPrefix(line, "0::")
		if !ok {
			continue
		}
		switch {
		case !strings.HasPrefix(path, "/"), strings.Contains(path, "/.."), strings.HasSuffix(path, " (deleted)"):
			// Above our cgroup namespace's root, or gone: not ours to use.
			return "", fmt.Errorf("our cgroup %q is outside what we can see", path)
		case path == "/":
			return "", errors.New("we run in the root cgroup, which nobody delegates")
		}
		return path, nil
	}
	return "", errors.New("no cgroup v2 hierarchy (no 0:: line in /proc/self/cgroup)")
}

// cgroupDir finds the directory of the cgroup at path in a cgroup2 mount
// (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host), from
// /proc/self/mountinfo, and checks it is one.
func cgroupDir(mountinfo []byte, path string) (string, error) {
	dir, ok := mountDir(mountinfo, path)
	if !ok {
		return "", errors.New("no cgroup2 mount shows our cgroup")
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "", fmt.Errorf("our cgroup %s: %w", dir, err)
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		return "", fmt.Errorf("%s is not on cgroup2", dir)
	}
	return dir, nil
}

// mountDir is where the first cgroup2 mount that shows path has it.
func mountDir(mountinfo []byte, path string) (string, bool) {
	for line := range strings.SplitSeq(string(mountinfo), "\n") {
		// id parent major:minor root mountpoint options [optional...] - type source super-options
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 1 || g[0] != "cgroup2" {
			continue
		}
		root, mnt := unescapeMount(f[3]), unescapeMount(f[4])
		rel, ok := strings.CutPrefix(path, strings.TrimSuffix(root, "/"))
		if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
			continue // this mount shows another part of the hierarchy
		}
		return filepath.Join(mnt, rel), true
	}
	return "", false
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// delegation proves that the cgroup at dir (path) is delegated to us and
// says how. systemd's system manager marks a delegated cgroup with
// trusted.delegate (which only a privileged process can set, and only one
// can read) and user.delegate (readable by all; we believe it only on a
// cgroup we own, whose owner alone besides root may set it: systemd's own
// cg_is_delegated reads it the same way). A user manager marks nothing, so
// for a unit of the user manager of our uid we ask that manager.
func delegation(ctx context.Context, dir, path string, euid int) (string, error) {
	if delegateMark(dir, "trusted.delegate") {
		return "trusted.delegate=1 on our cgroup (set by systemd's system manager; only root may set it)", nil
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return "", fmt.Errorf("our cgroup %s: %w", dir, err)
	}
	if delegateMark(dir, "user.delegate") {
		if int(st.Uid) != euid {
			return "", fmt.Errorf("%s carries user.delegate but is owned by uid %d, not by us (uid %d): anyone owning it could have set it", dir, st.Uid, euid)
		}
		return fmt.Sprintf("user.delegate=1 on our cgroup, owned by us (uid %d): set by systemd, or by nobody but us", euid), nil
	}
	unit, ok := userManagerUnit(path, euid)
	if !ok || int(st.Uid) != euid {
		return "", fmt.Errorf("%s carries no delegation mark: not a unit with Delegate=yes", dir)
	}
	return askUserManager(ctx, unit, path)
}

// delegateMark reads a delegation xattr: systemd writes "1".
func delegateMark(dir, name string) bool {
	buf := make([]byte, 16)
	n, err := unix.Getxattr(dir, name, buf)
	if err != nil {
		return false
	}
	v, err := strconv.ParseBool(string(bytes.TrimSpace(buf[:n])))
	return err == nil && v
}

// userManagerUnit names the unit whose cgroup is path, when path lies
// inside the user manager of uid (user@<uid>.service): a service or scope.
func userManagerUnit(path string, uid int) (string, bool) {
	dirs := strings.Split(path, "/")
	unit := dirs[len(dirs)-1]
	if !strings.HasSuffix(unit, ".service") && !strings.HasSuffix(unit, ".scope") {
		return "", false
	}
	for _, d := range dirs[:len(dirs)-1] {
		if d == "user@"+strconv.Itoa(uid)+".service" {
			return unit, true
		}
	}
	return "", false
}

// askUserManager asks the user manager (through its private socket in
// XDG_RUNTIME_DIR, no D-Bus needed) whether unit has Delegate=yes and owns
// path: its word is the only proof a user manager gives.
func askUserManager(ctx context.Context, unit, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "systemctl", "--user", "show", "--property=Delegate", "--property=ControlGroup", "--", unit).Output()
	if err != nil {
		return "", fmt.Errorf("ask the user manager whether %s is delegated: %w", unit, err)
	}
	props := map[string]string{}
	for line := range strings.SplitSeq(string(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			props[k] = v
		}
	}
	if props["ControlGroup"] != path || props["Delegate"] != "yes" {
		return "", fmt.Errorf("the user manager says %s has Delegate=%s and cgroup %q (ours is %s)", unit, props["Delegate"], props["ControlGroup"], path)
	}
	return "the user manager of our uid: " + unit + " has Delegate=yes and this cgroup (user managers mark none)", nil
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

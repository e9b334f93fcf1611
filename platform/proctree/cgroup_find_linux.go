package proctree

// Finding the cgroup systemd delegated to us, and proving it is ours to
// use: what delegatedCgroups returns before any tree starts in it.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

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

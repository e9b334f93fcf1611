package proctree

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/cgrouptest"
	"golang.org/x/sys/unix"
)

func TestOwnCgroup(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "0::/system.slice/hermes-supervisor.service\n", want: "/system.slice/hermes-supervisor.service"},
		{in: "12:pids:/x\n1:name=systemd:/y\n0::/user.slice/u.scope\n", want: "/user.slice/u.scope"},
		{in: "0::/\n", err: "root cgroup"},
		{in: "0::/../..\n", err: "outside"},
		{in: "0::/a/b (deleted)\n", err: "outside"},
		{in: "4:memory:/m\n", err: "no cgroup v2"},
	} {
		got, err := ownCgroup([]byte(tc.in))
		if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ownCgroup(%q) = %q, %v; want %q, error with %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestMountDir(t *testing.T) {
	const hybrid = `25 30 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
27 25 0:24 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd
`
	const bound = `40 30 0:23 /payload /sys/fs/cgroup rw - cgroup2 cgroup2 rw
41 30 0:23 / /mnt/with\040space rw - cgroup2 cgroup2 rw
`
	for _, tc := range []struct {
		info, path, want string
	}{
		{hybrid, "/system.slice/a.service", "/sys/fs/cgroup/unified/system.slice/a.service"},
		{bound, "/payload/system.slice/a.service", "/sys/fs/cgroup/system.slice/a.service"},
		// A mount showing /payload does not show /payload2: the next one does.
		{bound, "/payload2/a.service", "/mnt/with space/payload2/a.service"},
		{"26 25 0:23 / /sys/fs/cgroup rw - cgroup cgroup rw,memory\n", "/a", ""},
	} {
		got, ok := mountDir([]byte(tc.info), tc.path)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("mountDir(%q) = %q, %v; want %q", tc.path, got, ok, tc.want)
		}
	}
}

func TestUserManagerUnit(t *testing.T) {
	for _, tc := range []struct {
		path string
		uid  int
		want string
	}{
		{"/user.slice/user-1000.slice/user@1000.service/app.slice/hermes-supervisor.service", 1000, "hermes-supervisor.service"},
		{"/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope", 1000, "run-r1.scope"},
		// Another user's manager, a slice, or no user manager at all.
		{"/user.slice/user-1000.slice/user@1000.service/app.slice/hermes-supervisor.service", 1001, ""},
		{"/user.slice/user-1000.slice/user@1000.service/app.slice", 1000, ""},
		{"/system.slice/hermes-supervisor.service", 1000, ""},
		{"/user.slice/user-1000.slice/user@1000.service", 1000, ""},
	} {
		got, ok := userManagerUnit(tc.path, tc.uid)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("userManagerUnit(%q, %d) = %q, %v; want %q", tc.path, tc.uid, got, ok, tc.want)
		}
	}
}

// noExitSleep spares each helper the race detector's second of sleep at
// exit.
const noExitSleep = "GORACE=atexit_sleep_ms=0"

// bystander is a process started straight into the cgroup dir, which must
// outlive whatever the test kills; it is killed when the test ends.
type bystander struct {
	pid    int
	exited chan struct{}
}

func startBystander(t *testing.T, dir string) *bystander {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PLATFORM_HELPER=sleep")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b := &bystander{pid: cmd.Process.Pid, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(b.exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-b.exited })
	return b
}

func (b *bystander) alive() bool {
	select {
	case <-b.exited:
		return false
	default:
		return true
	}
}

func TestDelegationMarks(t *testing.T) {
	base, path := cgrouptest.New(t)
	ctx := context.Background()
	trusted := cgrouptest.Sub(t, base, "trusted", "trusted.delegate", "1")
	user := cgrouptest.Sub(t, base, "user", "user.delegate", "1")
	off := cgrouptest.Sub(t, base, "off", "trusted.delegate", "0", "user.delegate", "0")
	plain := cgrouptest.Sub(t, base, "plain")
	// The attack: a user marks a cgroup they own as delegated, and a
	// supervisor of another user (root here) runs in it.
	alien := cgrouptest.Sub(t, base, "alien", "user.delegate", "1")
	if err := os.Chown(alien, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir  string
		euid int
		ok   bool
	}{
		{trusted, 0, true},
		{user, 0, true},
		{alien, 65534, true}, // its owner's own mark is its owner's word
		{alien, 0, false},
		{off, 0, false},
		{plain, 0, false},
	} {
		ev, err := delegation(ctx, tc.dir, path+"/"+filepath.Base(tc.dir), tc.euid)
		if (err == nil) != tc.ok {
			t.Errorf("delegation(%s, uid %d) = %q, %v; want delegated: %v", filepath.Base(tc.dir), tc.euid, ev, err, tc.ok)
		}
	}
}

// startLeaver starts a tree under cg whose root, once Start has
// returned (a late move is done by then), starts a helper in a session of
// its own, reports its pid and, with exit set, exits.
func startLeaver(t *testing.T, cg *Cgroups, exit bool) (*Tree, int) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	goR, goW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer goW.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PLATFORM_HELPER=parent", "PLATFORM_SETSID=1", "PLATFORM_GO=1", noExitSleep)
	if exit {
		cmd.Env = append(cmd.Env, "PLATFORM_EXIT=1")
	}
	cmd.Stdin, cmd.Stdout = goR, w
	tree, err := Start(cmd, cg, nil)
	w.Close()
	goR.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := goW.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("the tree's root said no helper pid: %v", err)
	}
	helper, _ := strconv.Atoi(strings.TrimSpace(line))
	return tree, helper
}

// A tree's cgroup takes down the helper that left its process group, once
// the root has exited, and nothing else: not a process in a sibling
// cgroup, not one in our own cgroup (where the supervisor runs), not one
// in a cgroup that merely has the name a tree's cgroup would take. Each
// way in and each way to kill is tried: clone3 or a late move,
// cgroup.kill or freeze and kill one by one.
func TestCgroupTakesTheLeftoversOnly(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		noClone3, noKillFile bool
	}{
		{"clone3+cgroup.kill", false, false},
		{"late move", true, false},
		{"freeze and kill each", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, path := cgrouptest.New(t)
			deleg := cgrouptest.Sub(t, base, "delegated", "trusted.delegate", "1")
			sibling := startBystander(t, cgrouptest.Sub(t, base, "sibling"))
			ours := startBystander(t, deleg)
			squatted := startBystander(t, cgrouptest.Sub(t, deleg, "gateway"))
			cg := &Cgroups{dir: deleg, sys: cgroupsSys{path: path + "/delegated", noClone3: tc.noClone3, noKillFile: tc.noKillFile}}

			tree, helper := startLeaver(t, cg, true)
			where, why := tree.Cgroup()
			if want := filepath.Join(deleg, "gateway-2"); where != want || why != nil {
				t.Fatalf("the tree's cgroup is %q (%v), want %s: an existing name is never taken", where, why, want)
			}
			if !inCgroup(helper, path+"/delegated/gateway-2") {
				t.Fatalf("the helper %d is not in the tree's cgroup", helper)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			left, err := tree.Wait(ctx)
			if err != nil {
				t.Fatalf("root: %v", err)
			}
			if !slices.Equal(left.PIDs, []int{helper}) || left.Cgroup != where || left.Err != nil {
				t.Errorf("leftovers = %+v, want the helper %d alone in %s", left, helper, where)
			}
			waitGone(t, helper)
			if _, err := os.Stat(where); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the tree's cgroup %s was not removed: %v", where, err)
			}
			for name, b := range map[string]*bystander{"a sibling cgroup": sibling, "our own cgroup": ours, "a cgroup named gateway we did not make": squatted} {
				if !b.alive() {
					t.Errorf("the process in %s (pid %d) was killed", name, b.pid)
				}
			}
			if _, err := os.Stat(filepath.Join(deleg, "gateway")); err != nil {
				t.Errorf("the cgroup named gateway we did not make is gone: %v", err)
			}
		})
	}
}

// At the end of a stop timeout, Kill takes the root and its helper at once,
// through the cgroup: the helper is in no process group of the tree's.
func TestCgroupKillTakesTheWholeTree(t *testing.T) {
	base, path := cgrouptest.New(t)
	deleg := cgrouptest.Sub(t, base, "delegated", "trusted.delegate", "1")
	sibling := startBystander(t, cgrouptest.Sub(t, base, "sibling"))
	cg := &Cgroups{dir: deleg, sys: cgroupsSys{path: path + "/delegated"}}
	tree, helper := startLeaver(t, cg, false)
	if err := tree.Kill(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	left, err := tree.Wait(ctx)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Signal != syscall.SIGKILL {
		t.Fatalf("root: %v, want killed by SIGKILL", err)
	}
	waitGone(t, helper)
	if left.Err != nil {
		t.Errorf("leftovers: %v", left.Err)
	}
	if _, err := os.Stat(filepath.Join(deleg, "gateway")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the tree's cgroup was not removed: %v", err)
	}
	if !sibling.alive() {
		t.Errorf("the process in a sibling cgroup was killed")
	}
}

// TestCgroupHelper is not a test: with CGROUP_HELPER=delegated it asks
// DelegatedCgroups as the supervisor does, starts a tree that leaves a
// helper, and prints what happened.
func TestCgroupHelper(t *testing.T) {
	if os.Getenv("CGROUP_HELPER") != "delegated" {
		return
	}
	cg, err := DelegatedCgroups(context.Background())
	if err != nil {
		self, _ := os.ReadFile("/proc/self/cgroup")
		path, _ := ownCgroup(self)
		fmt.Printf("none %q %v\n", "0::"+path, err)
		os.Exit(0)
	}
	self, _ := os.ReadFile("/proc/self/cgroup")
	path, _ := ownCgroup(self)
	fmt.Printf("delegated %s %q\n", cg, "0::"+path)
	tree, helper := startLeaver(t, cg, true)
	where, _ := tree.Cgroup()
	left, err := tree.Wait(context.Background())
	fmt.Printf("tree %s helper %d left %v %v %v\n", where, helper, left.PIDs, left.Err, err)
	os.Exit(0)
}

// DelegatedCgroups, run as the supervisor runs it: in a cgroup that
// carries systemd's mark, it moves the process into "supervisor" and its
// trees go beside it; in one without, it changes nothing.
func TestDelegatedCgroups(t *testing.T) {
	base, path := cgrouptest.New(t)
	run := func(dir string) []string {
		t.Helper()
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		cmd := exec.Command(os.Args[0], "-test.run=^TestCgroupHelper$")
		cmd.Env = append(os.Environ(), "CGROUP_HELPER=delegated", noExitSleep)
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("helper: %v\n%s", err, out)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}

	deleg := cgrouptest.Sub(t, base, "delegated", "trusted.delegate", "1")
	out := run(deleg)
	want := fmt.Sprintf("delegated %s %q", deleg, "0::"+path+"/delegated/supervisor")
	if len(out) != 2 || out[0] != want {
		t.Fatalf("in a delegated cgroup the helper said\n%s\nwant %s", strings.Join(out, "\n"), want)
	}
	// Its tree's root left a helper, which was all that was left, killed.
	h := strings.Fields(out[1])
	if len(h) < 4 || out[1] != fmt.Sprintf("tree %s helper %s left [%s] <nil> <nil>", filepath.Join(deleg, "gateway"), h[3], h[3]) {
		t.Errorf("its tree: %s; want it in %s/gateway, its helper what was left", out[1], deleg)
	}

	plain := cgrouptest.Sub(t, base, "plain")
	out = run(plain)
	if len(out) != 1 || !strings.HasPrefix(out[0], fmt.Sprintf("none %q", "0::"+path+"/plain")) || !strings.Contains(out[0], "no delegation mark") {
		t.Errorf("in a cgroup without the mark the helper said\n%s\nwant none, still in %s/plain", strings.Join(out, "\n"), path)
	}
	if _, err := os.Stat(filepath.Join(plain, selfCgroupName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a cgroup without the mark got a child: %v", err)
	}
}

// Killing one by one (kernels without cgroup.kill) signals a listed pid
// only after proving, through a pidfd taken first, that it is in the
// tree's cgroup: a pid outside, however it got into the list, is spared.
func TestKillMemberSparesOutsiders(t *testing.T) {
	base, path := cgrouptest.New(t)
	outside := startBystander(t, cgrouptest.Sub(t, base, "outside"))
	cgrouptest.Sub(t, base, "gateway")
	cg := &treeCgroup{dir: filepath.Join(base, "gateway"), path: path + "/gateway", fd: -1}
	if err := cg.killMember(outside.pid); err != nil {
		t.Fatal(err)
	}
	if err := cg.killMember(os.Getpid()); !errors.Is(err, ErrRefused) {
		t.Errorf("killMember of the supervisor itself: %v, want ErrRefused", err)
	}
	if hit, why := signalled(outside.pid); hit {
		t.Errorf("a process outside the cgroup was killed: %s", why)
	}
}

// signalled reports whether pid is dying or dead: a zombie, or SIGKILL
// pending. The kernel marks a SIGKILL pending on every thread before the
// kill returns, so a kill that happened is seen without waiting.
func signalled(pid int) (bool, string) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return true, err.Error()
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "State":
			if strings.HasPrefix(v, "Z") || strings.HasPrefix(v, "X") {
				return true, line
			}
		case "SigPnd", "ShdPnd":
			if m, err := strconv.ParseUint(v, 16, 64); err == nil && m&(1<<(uint(syscall.SIGKILL)-1)) != 0 {
				return true, line
			}
		}
	}
	return false, ""
}

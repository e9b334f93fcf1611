package systemdtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/syncbuf"
)

// machines numbers the containers of this test process: their names (and
// cgroups) must differ while tests run in parallel.
var machines atomic.Int64

// machine is one booted container: systemd as PID 1 over the host's root.
type machine struct {
	t       *testing.T
	name    string
	bin     string
	hostNet bool   // shares the host's network namespace (see hostNetwork)
	disk    string // the tmpfs that holds the container's writes
	mounted bool
	nspawn  *exec.Cmd
	exited  chan struct{}
	console *syncbuf.Buffer
	init    int
	cgroups []string
}

// requireHost skips the test, saying why, where a container cannot boot.
func requireHost(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("boots a systemd container: not in -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: systemd-nspawn boots a container only as root")
	}
	for _, tool := range []string{"systemd-nspawn", "unshare", "nsenter", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (apt-get install systemd-container util-linux; make test does)", tool)
		}
	}
	if _, err := os.Stat("/lib/systemd/systemd"); err != nil {
		t.Skip("needs systemd installed on this machine: the container boots the host's own root")
	}
}

// hostCgroups are the cgroup directories nspawn puts the container under:
// ours, in each hierarchy it uses, so that nothing is left at the root of
// the host's and cleanup can kill what remains.
func hostCgroups(name string) []string {
	if _, err := os.Stat("/sys/fs/cgroup/unified/cgroup.procs"); err == nil {
		return []string{"/sys/fs/cgroup/unified/" + name, "/sys/fs/cgroup/systemd/" + name}
	}
	return []string{"/sys/fs/cgroup/" + name}
}

// bootOption changes how boot starts a container.
type bootOption func(*machine)

// hostNetwork boots the container in the host's network namespace, as
// docker --network host, Kubernetes hostNetwork and nspawn without
// --private-network run one: its own PID and mount namespaces, but every
// socket of the host in sight, /proc/net/unix included.
func hostNetwork(m *machine) { m.hostNet = true }

// boot starts the container with bin as /usr/local/bin/hermes-supervisor
// and waits until systemd reports it running. Its writes go to a tmpfs
// that lives until the test ends, so that after a power loss (crash) the
// same machine boots again with its files. Cleanup powers it off and
// removes its cgroups and mounts even when the test failed. The network
// is the container's own unless an option says otherwise.
func boot(t *testing.T, bin string, opts ...bootOption) *machine {
	t.Helper()
	m := &machine{t: t, name: fmt.Sprintf("hsd%d-%d", os.Getpid(), machines.Add(1)), bin: bin, console: &syncbuf.Buffer{}}
	for _, o := range opts {
		o(m)
	}
	m.cgroups = hostCgroups(m.name)
	t.Cleanup(m.teardown)
	// The upper layer is a tmpfs of its own: overlayfs refuses an upper
	// dir on the file system it overlays (the host's /).
	m.disk = t.TempDir()
	if err := syscall.Mount("tmpfs", m.disk, "tmpfs", 0, "mode=0755"); err != nil {
		t.Skipf("cannot mount a tmpfs for the container: %v", err)
	}
	m.mounted = true
	for _, d := range []string{"upper", "work", "root", "units"} {
		if err := os.Mkdir(filepath.Join(m.disk, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	m.start()
	return m
}

// start launches nspawn and waits for the boot to finish.
func (m *machine) start() {
	t := m.t
	t.Helper()
	for _, cg := range m.cgroups {
		if err := os.Mkdir(cg, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			t.Skipf("cannot create the container's cgroup: %v", err)
		}
	}
	m.exited = make(chan struct{})
	m.init = 0
	// The shell moves itself into our cgroups, then becomes nspawn (every
	// step execs, so its pid is nspawn's), in a mount namespace of its own
	// where the root is an overlay of the host's / (read-only below) and
	// the tmpfs: those mounts die with it. /etc/systemd/system is a
	// directory of the tmpfs, so the host's enabled units stay hidden and
	// ours survive a reboot.
	script := `for cg in $CGROUPS; do echo $$ > "$cg/cgroup.procs" || exit 1; done
exec unshare -m --propagation private sh -c 'mount -t overlay overlay -o lowerdir=/,upperdir="$DISK/upper",workdir="$DISK/work" "$DISK/root" &&
exec systemd-nspawn -q -D "$DISK/root" $NETWORK --bind="$DISK/units":/etc/systemd/system --bind-ro="$BIN":/usr/local/bin/hermes-supervisor --boot --register=no --keep-unit --machine="$NAME" --console=pipe'`
	network := "--private-network"
	if m.hostNet {
		network = ""
	}
	m.nspawn = exec.Command("/bin/sh", "-c", script)
	m.nspawn.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1",
		"CGROUPS=" + strings.Join(m.cgroups, " "), "DISK=" + m.disk, "BIN=" + m.bin, "NAME=" + m.name, "NETWORK=" + network}
	m.nspawn.Stdout, m.nspawn.Stderr = m.console, m.console
	m.nspawn.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := m.nspawn.Start(); err != nil {
		t.Fatalf("start systemd-nspawn: %v", err)
	}
	exited := m.exited
	go func() { _ = m.nspawn.Wait(); close(exited) }()
	m.findInit()
	// Until systemd listens on its socket, systemctl answers "offline" at
	// once instead of waiting: ask again until it can wait.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := m.exec(30*time.Second, "systemctl", "is-system-running", "--wait")
		state := strings.TrimSpace(out)
		if state == "running" || state == "degraded" {
			return
		}
		starting := state == "offline" || strings.Contains(state, "Failed to connect to bus")
		if !starting || time.Now().After(deadline) {
			t.Fatalf("the container did not boot: %q %v\n%s", state, err, m.console)
		}
		select {
		case <-m.exited:
			t.Fatalf("systemd-nspawn exited while booting: %v\n%s", m.nspawn.ProcessState, m.console)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// powerLoss kills everything in the container at once, as pulling the
// plug would, then boots it again over the same files.
func (m *machine) powerLoss() {
	m.t.Helper()
	for _, cg := range m.cgroups {
		killCgroup(cg)
	}
	select {
	case <-m.exited:
	case <-time.After(10 * time.Second):
		m.t.Fatalf("systemd-nspawn (pid %d) outlived its cgroup's kill", m.nspawn.Process.Pid)
	}
	for _, cg := range m.cgroups {
		if err := removeCgroup(cg); err != nil {
			m.t.Fatal(err)
		}
	}
	m.start()
}

// findInit waits for the container's systemd: nspawn's child whose pid is 1
// in its own namespace (nspawn first forks a short-lived outer child,
// which is not it).
func (m *machine) findInit() {
	m.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if pid := containerInit(m.nspawn.Process.Pid); pid > 0 {
			m.init = pid
			return
		}
		select {
		case <-m.exited:
			m.t.Fatalf("systemd-nspawn exited: %v\n%s", m.nspawn.ProcessState, m.console)
		case <-time.After(20 * time.Millisecond):
		}
	}
	m.t.Fatalf("no container init under systemd-nspawn (pid %d) after 10s\n%s", m.nspawn.Process.Pid, m.console)
}

func containerInit(parent int) int {
	procs, _ := filepath.Glob("/proc/[0-9]*/status")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var ppid int
		var nspid []string
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "PPid:"); ok {
				ppid, _ = strconv.Atoi(strings.TrimSpace(v))
			}
			if v, ok := strings.CutPrefix(line, "NSpid:"); ok {
				nspid = strings.Fields(v)
			}
		}
		if ppid == parent && len(nspid) == 2 && nspid[1] == "1" {
			pid, _ := strconv.Atoi(nspid[0])
			return pid
		}
	}
	return 0
}

// teardown powers the container off, kills whatever is left in its
// cgroups and removes them.
func (m *machine) teardown() {
	if m.nspawn != nil && m.nspawn.Process != nil {
		if m.init > 0 {
			// SIGRTMIN+4 asks systemd to power off (glibc's SIGRTMIN is 34).
			_ = syscall.Kill(m.init, syscall.Signal(34+4))
		}
		select {
		case <-m.exited:
		case <-time.After(5 * time.Second):
			m.t.Logf("the container did not power off within 5s: killing it")
		}
	}
	for _, cg := range m.cgroups {
		killCgroup(cg)
	}
	if m.nspawn != nil && m.nspawn.Process != nil {
		select {
		case <-m.exited:
		case <-time.After(5 * time.Second):
			m.t.Errorf("systemd-nspawn (pid %d) outlived its cgroup's kill", m.nspawn.Process.Pid)
		}
	}
	for _, cg := range m.cgroups {
		if err := removeCgroup(cg); err != nil {
			m.t.Errorf("cgroup left behind: %v", err)
		}
	}
	if m.mounted {
		if err := syscall.Unmount(m.disk, syscall.MNT_DETACH); err != nil {
			m.t.Errorf("unmount the container's tmpfs: %v", err)
		}
	}
}

// killCgroup kills every process in cg and below: cgroup.kill on cgroup2,
// one by one on a v1 hierarchy.
func killCgroup(cg string) {
	if err := os.WriteFile(filepath.Join(cg, "cgroup.kill"), []byte("1"), 0); err == nil {
		return
	}
	_ = filepath.WalkDir(cg, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.Name() != "cgroup.procs" {
			return nil
		}
		data, _ := os.ReadFile(path)
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		return nil
	})
}

// removeCgroup removes cg and every cgroup below it, deepest first,
// waiting up to 5 s for killed processes to leave them.
func removeCgroup(cg string) error {
	var dirs []string
	_ = filepath.WalkDir(cg, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	deadline := time.Now().Add(5 * time.Second)
	for i := len(dirs) - 1; i >= 0; i-- {
		for {
			err := os.Remove(dirs[i])
			if err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("rmdir %s: %w", dirs[i], err)
			}
			time.Sleep(20 * time.Millisecond) // the kernel empties a killed cgroup asynchronously
		}
	}
	return nil
}

// env is what commands inside run with: nothing of the test's.
var env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C.UTF-8",
	"SYSTEMD_PAGER=", "SYSTEMD_COLORS=0"}

// exec runs argv inside the container as root and returns its combined
// output; the error carries the exit status.
func (m *machine) exec(timeout time.Duration, argv ...string) (string, error) {
	return m.execAs("", timeout, argv...)
}

// execAs runs argv as user (root when empty), with that user's
// XDG_RUNTIME_DIR, as a login through lingering would have it.
func (m *machine) execAs(user string, timeout time.Duration, argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args := []string{"-t", strconv.Itoa(m.init), "-a", "--"}
	if user != "" {
		uid := m.uid(user)
		args = append(args, "setpriv", "--reuid="+user, "--regid="+user, "--init-groups", "env", "-i",
			"HOME=/home/"+user, "USER="+user, "XDG_RUNTIME_DIR=/run/user/"+uid, "PATH="+strings.TrimPrefix(env[0], "PATH="), "SYSTEMD_PAGER=")
	}
	cmd := exec.CommandContext(ctx, "nsenter", append(args, argv...)...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// lingeringUser adds user, with a home, and lingering, so that their user
// manager runs without a login; it returns their uid once it does.
func (m *machine) lingeringUser(user string) string {
	m.must("useradd", "-m", user)
	m.must("loginctl", "enable-linger", user)
	uid := m.uid(user)
	m.waitUnit("", "user@"+uid+".service", 10*time.Second, "the user manager running", active, "ActiveState")
	return uid
}

func (m *machine) uid(user string) string {
	out, err := m.exec(5*time.Second, "id", "-u", user)
	if err != nil {
		m.t.Fatalf("id -u %s: %v: %s", user, err, out)
	}
	return strings.TrimSpace(out)
}

// must runs argv as root and fails the test when it fails.
func (m *machine) must(argv ...string) string {
	m.t.Helper()
	out, err := m.exec(30*time.Second, argv...)
	if err != nil {
		m.t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return out
}

// exitCode is the exit status of a command's error; 0 for none.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// show reads properties of unit (a system unit, or user's with user set).
func (m *machine) show(user, unit string, props ...string) map[string]string {
	m.t.Helper()
	argv := []string{"systemctl", "show", "--property=" + strings.Join(props, ","), unit}
	if user != "" {
		argv = []string{"systemctl", "--user", "show", "--property=" + strings.Join(props, ","), unit}
	}
	out, err := m.execAs(user, 10*time.Second, argv...)
	if err != nil {
		m.t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = v
		}
	}
	return got
}

// waitUnit waits until cond holds for the unit's properties, polling
// systemd (which offers no event a shell client can block on for this),
// and fails with the last properties read after timeout.
func (m *machine) waitUnit(user, unit string, timeout time.Duration, what string, cond func(map[string]string) bool, props ...string) map[string]string {
	m.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := m.show(user, unit, props...)
		if cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("%s: %s not reached after %v: %v", unit, what, timeout, got)
		}
		time.Sleep(50 * time.Millisecond) // the next look at systemd's state, not a guess at timing
	}
}

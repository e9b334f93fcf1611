//go:build unix

package platform

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary doubles as the children the tests need.
func TestMain(m *testing.M) {
	switch os.Getenv("PLATFORM_HELPER") {
	case "lock":
		f, err := os.OpenFile(os.Getenv("PLATFORM_LOCK"), os.O_RDWR|os.O_CREATE, 0o644)
		if err == nil {
			err = LockFile(f)
		}
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	case "parent": // start a grandchild, print its pid, then block or exit
		// Handle SIGTERM before reporting ready, or the test's signal can
		// arrive first and kill us with the default action.
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM)
		if os.Getenv("PLATFORM_GO") != "" {
			// Wait for the word: until then the test may still be moving us.
			_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		}
		gc := exec.Command(os.Args[0])
		gc.Env = append(os.Environ(), "PLATFORM_HELPER=sleep")
		if os.Getenv("PLATFORM_SETSID") != "" {
			// Out of the tree's process group, as setsid(1) would.
			gc.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		if err := gc.Start(); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(strconv.Itoa(gc.Process.Pid) + "\n")
		if os.Getenv("PLATFORM_EXIT") != "" {
			os.Exit(0)
		}
		<-sigs
		os.Exit(7) // SIGTERM received
	case "escape": // a tree that tries to outlive its kill: see escape_unix_test.go
		escapeHelper()
	case "sleep":
		// Not select{}: without cgo the runtime would call it a deadlock.
		for {
			time.Sleep(time.Hour)
		}
	case "squat": // bind the address as whoever we run as, and answer lies
		ln, err := net.Listen("unix", os.Getenv("PLATFORM_ADDR"))
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("bound\n")
		for {
			c, err := ln.Accept()
			if err != nil {
				os.Exit(0)
			}
			_, _ = c.Write([]byte(`{"ok":true,"status":{"state":"running"}}` + "\n"))
			c.Close()
		}
	case "dial": // dial the address as whoever we run as
		c, err := DialControl(context.Background(), os.Getenv("PLATFORM_ADDR"))
		switch {
		case errors.Is(err, ErrForeignPeer):
			os.Exit(5)
		case err != nil:
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(3)
		}
		c.Close()
		os.Exit(0)
	}
	// Orphaned grandchildren are reparented to us, so the test can see them
	// die instead of guessing.
	becomeSubreaper()
	os.Exit(m.Run())
}

func shortTempDir(t *testing.T) string {
	d, err := os.MkdirTemp("", "pt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func checkPrivate(t *testing.T, addr string) {
	t.Helper()
	fi, err := os.Stat(addr)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v %v, want 0600", fi.Mode(), err)
	}
}

// leaveStaleEndpoint leaves a socket file nobody listens on, as a killed
// supervisor does.
func leaveStaleEndpoint(t *testing.T, addr string) {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if _, err := os.Stat(addr); err != nil {
		t.Fatalf("no stale socket: %v", err)
	}
}

func TestControlAddressShortensLongHomes(t *testing.T) {
	long := "/" + strings.Repeat("h", 120)
	a, b := ControlAddress(long), ControlAddress(long)
	if a != b || len(a) >= 104 {
		t.Fatalf("long home address %q", a)
	}
	if ControlAddress(long+"x") == a {
		t.Fatal("two homes share an address")
	}
	if got := ControlAddress("/h"); got != "/h/hermes-supervisor.sock" {
		t.Fatalf("short home address %q", got)
	}
	if got := ControlAddresses("/h"); len(got) != 1 || got[0] != "/h/hermes-supervisor.sock" {
		t.Fatalf("a short home has one address, got %q", got)
	}
}

// TestControlAddressIgnoresTheEnvironment: the address was taken from the
// caller's $XDG_RUNTIME_DIR, so a shell from su, ssh or cron looked
// elsewhere than the supervisor its service manager started, and said it
// was not running. Now the address is the same whatever the environment
// says, and the addresses a client tries include the old ones.
func TestControlAddressIgnoresTheEnvironment(t *testing.T) {
	long := "/" + strings.Repeat("h", 120)
	var got []string
	for _, env := range [][2]string{{"", ""}, {"/run/user/4242", "/var/tmp"}, {t.TempDir(), t.TempDir()}, {"relative", "/nonexistent"}} {
		t.Setenv("XDG_RUNTIME_DIR", env[0])
		t.Setenv("TMPDIR", env[1])
		got = append(got, ControlAddress(long))
		all := ControlAddresses(long)
		if all[0] != got[len(got)-1] {
			t.Fatalf("ControlAddresses %q does not start with ControlAddress", all)
		}
		if x := env[0]; filepath.IsAbs(x) && len(x) < 40 {
			if want := filepath.Join(x, filepath.Base(all[0])); !slices.Contains(all, want) {
				t.Errorf("the address older versions used, %s, is not tried: %q", want, all)
			}
		}
	}
	for _, a := range got[1:] {
		if a != got[0] {
			t.Fatalf("the address follows the environment: %q", got)
		}
	}
	uid := strconv.Itoa(os.Geteuid())
	if d := filepath.Dir(got[0]); d != "/run/user/"+uid && d != "/tmp/hermes-supervisor-"+uid {
		t.Fatalf("long home address %s is neither in /run/user/%s nor /tmp/hermes-supervisor-%s", got[0], uid, uid)
	}
}

// TestControlAddressesIn: the user's runtime directory comes first only
// while it is a private directory of ours; the /tmp fallback is always
// tried, and no address is too long for a socket or listed twice.
func TestControlAddressesIn(t *testing.T) {
	long := "/" + strings.Repeat("h", 120)
	name := "hermes-supervisor-" + homeHash(long) + ".sock"
	base := shortTempDir(t)
	own := filepath.Join(base, "own")
	open := filepath.Join(base, "open")
	link := filepath.Join(base, "link")
	for _, d := range []string{own, open} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(own, link); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(base, "tmp")
	tooLong := "/" + strings.Repeat("x", maxSocketPath)
	for _, tt := range []struct {
		run    string
		legacy []string
		want   []string
	}{
		{own, nil, []string{own, tmp}},
		{open, nil, []string{tmp, open}},
		{link, nil, []string{tmp, link}},
		{filepath.Join(base, "missing"), nil, []string{tmp, filepath.Join(base, "missing")}},
		{own, []string{own, tooLong, base}, []string{own, tmp, base}},
	} {
		got := controlAddressesIn(long, tt.run, tmp, tt.legacy)
		var want []string
		for _, d := range tt.want {
			want = append(want, filepath.Join(d, name))
		}
		if !slices.Equal(got, want) {
			t.Errorf("run dir %s, legacy %q:\n got %q\nwant %q", tt.run, tt.legacy, got, want)
		}
	}
}

func TestLockFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "gateway.lock")
	a, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := LockFile(a); err != nil {
		t.Fatal(err)
	}
	b, _ := os.Open(p)
	defer b.Close()
	if err := LockFile(b); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open file: %v", err)
	}
	if err := UnlockFile(a); err != nil {
		t.Fatal(err)
	}
	if err := LockFile(b); err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	_ = UnlockFile(b)

	// Held by another process until it dies: the OS frees it.
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PLATFORM_HELPER=lock", "PLATFORM_LOCK="+p)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "locked\n" {
		t.Fatalf("holder said %q", line)
	}
	if err := LockFile(a); !errors.Is(err, ErrLocked) {
		t.Fatalf("lock held by a child: %v", err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if err := LockFile(a); err != nil {
		t.Fatalf("lock of a SIGKILLed holder: %v", err)
	}
}

// startParent starts a helper that spawns a grandchild and reports its pid.
func startParent(t *testing.T, exitAtOnce bool) (*Tree, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PLATFORM_HELPER=parent")
	if exitAtOnce {
		cmd.Env = append(cmd.Env, "PLATFORM_EXIT=1")
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	tree, err := StartTree(cmd, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	gc, _ := strconv.Atoi(strings.TrimSpace(line))
	return tree, gc
}

// waitGone reaps pid (reparented to us, the subreaper) and fails if it
// does not die.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		var ws unix.WaitStatus
		_, err := unix.Wait4(pid, &ws, 0, nil)
		if err == nil && !ws.Signaled() {
			err = errors.New("exited, not killed")
		}
		if errors.Is(err, unix.ECHILD) {
			// Not our child (no subreaper on this OS): watch it instead.
			for unix.Kill(pid, 0) == nil {
				time.Sleep(10 * time.Millisecond)
			}
			err = nil
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("grandchild %d: %v", pid, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("grandchild %d still runs", pid)
	}
}

func TestTreeKillTakesGrandchildren(t *testing.T) {
	tree, gc := startParent(t, false)
	if err := tree.Kill(); err != nil {
		t.Fatal(err)
	}
	_, err := tree.Wait(context.Background())
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("root: %v", err)
	}
	waitGone(t, gc)
	if err := tree.Kill(); err != nil {
		t.Fatalf("Kill after Wait must be a no-op: %v", err)
	}
}

func TestWaitKillsLeftoverGrandchildren(t *testing.T) {
	tree, gc := startParent(t, true)
	if _, err := tree.Wait(context.Background()); err != nil {
		t.Fatalf("root exit: %v", err)
	}
	waitGone(t, gc)
}

func TestTerminateSignalsOnlyTheRoot(t *testing.T) {
	tree, gc := startParent(t, false)
	if err := tree.Terminate(); err != nil {
		t.Fatal(err)
	}
	_, err := tree.Wait(context.Background())
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("root did not handle SIGTERM itself: %v", err)
	}
	waitGone(t, gc)
}

func TestSignals(t *testing.T) {
	if s, ok := RestartSignal(); !ok || s != unix.SIGUSR1 {
		t.Fatal("restart signal")
	}
	if s, ok := ReloadSignal(); !ok || s != unix.SIGHUP {
		t.Fatal("reload signal")
	}
	if s, ok := TerminateSignal(); !ok || s != unix.SIGTERM {
		t.Fatal("terminate signal")
	}
	if len(ShutdownSignals()) != 2 {
		t.Fatal("shutdown signals")
	}
}

func TestKillGroupTakesALostTree(t *testing.T) {
	// A gateway whose supervisor died: we hold no Tree for it, only its pid.
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PLATFORM_HELPER=parent")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	gc, _ := strconv.Atoi(strings.TrimSpace(line))
	if err := KillGroup(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || cmd.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("leader: %v", err)
	}
	waitGone(t, gc)
}

func TestKillGroupRefusesInitAndSelf(t *testing.T) {
	// Old code turned KillGroup(1) into kill(-1, SIGKILL): every process of
	// the user. Self and our own group are refused the same way.
	for _, pid := range []int{-1, 0, 1, os.Getpid()} {
		if err := KillGroup(pid); !errors.Is(err, ErrRefused) {
			t.Errorf("KillGroup(%d) = %v, want ErrRefused", pid, err)
		}
		if err := KillProcess(pid); !errors.Is(err, ErrRefused) {
			t.Errorf("KillProcess(%d) = %v, want ErrRefused", pid, err)
		}
	}
}

func TestKillGroupOfAMemberSparesItsGroup(t *testing.T) {
	// A process that does not lead its group is killed alone: the number
	// is only ever used as a group id after getpgid(pid) == pid.
	start := func(pgid int) *exec.Cmd {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "PLATFORM_HELPER=sleep")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	leader := start(0)
	t.Cleanup(func() { _ = leader.Process.Kill(); _ = leader.Wait() })
	member := start(leader.Process.Pid)
	if err := KillGroup(member.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := member.Wait(); err == nil || member.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("member: %v", err)
	}
	if err := unix.Kill(leader.Process.Pid, 0); err != nil {
		t.Fatalf("the group's leader was signalled too: %v", err)
	}
}

func TestReadRegularFileRefusesHostileFiles(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("root only"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: 2 GiB that cost nothing on disk and must cost nothing in RAM.
	if err := f.Truncate(2 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	mk := func(name string, make func(string) error) string {
		p := filepath.Join(dir, name)
		if err := make(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name string
		path string
		want error
	}{
		{"symlink", mk("link", func(p string) error { return os.Symlink(secret, p) }), ErrNotRegular},
		{"symlink to /dev/zero", mk("zero", func(p string) error { return os.Symlink("/dev/zero", p) }), ErrNotRegular},
		{"fifo", mk("fifo", func(p string) error { return unix.Mkfifo(p, 0o644) }), ErrNotRegular},
		{"device", "/dev/null", ErrNotRegular},
		{"directory", dir, ErrNotRegular},
		{"huge sparse file", big, ErrTooBig},
		{"missing", filepath.Join(dir, "none"), os.ErrNotExist},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := ReadRegularFile(c.path, 1<<20); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, c.want) {
					t.Fatalf("got %v, want %v", err, c.want)
				}
				if !strings.Contains(err.Error(), c.path) {
					t.Fatalf("error does not name the file: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("ReadRegularFile blocked")
			}
		})
	}
	b, err := ReadRegularFile(secret, 9)
	if err != nil || string(b) != "root only" {
		t.Fatalf("regular file at the limit: %q, %v", b, err)
	}
	if _, err := ReadRegularFile(secret, 8); !errors.Is(err, ErrTooBig) {
		t.Fatalf("one byte over the limit: %v", err)
	}
}

func TestOpenLockFileNeverFollowsALink(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("root only"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "hermes-supervisor.lock")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	if f, err := OpenLockFile(link, true); !errors.Is(err, ErrNotRegular) {
		if f != nil {
			f.Close()
		}
		t.Fatalf("symlink: %v", err)
	}
	fifo := filepath.Join(dir, "gateway.lock")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLockFile(fifo, true); err == nil {
		t.Fatal("a FIFO was opened as a lock file")
	}
	if b, _ := os.ReadFile(secret); string(b) != "root only" {
		t.Fatalf("the link's target changed: %q", b)
	}
	f, err := OpenLockFile(filepath.Join(dir, "new.lock"), true)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := LockFile(f); err != nil {
		t.Fatal(err)
	}
}

func TestReadRegularRefusesLinksAndFIFOs(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "gateway.pid")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadRegular(link, 10); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("symlink: %v", err)
	}
	fifo := filepath.Join(dir, "x.lock")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// A FIFO with no writer would block a plain open forever.
	done := make(chan error, 1)
	go func() { _, _, err := ReadRegular(fifo, 10); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) {
			t.Fatalf("fifo: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadRegular blocked on a FIFO")
	}
}

// The owner in a stamp is the uid that created the file: the writer rule
// of lockstore rests on it.
func TestStampOwner(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec")
	if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, st, err := ReadRegular(path, 10)
	if err != nil {
		t.Fatal(err)
	}
	if o := st.Owner(); o == nil || int(*o) != os.Geteuid() {
		t.Fatalf("owner %v, want %d", o, os.Geteuid())
	}
}

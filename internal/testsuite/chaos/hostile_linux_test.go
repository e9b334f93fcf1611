package chaos

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/pidns"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/platform/ctlsock"
	"github.com/hermes-agent/hermes-supervisor/procstate"
	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

// hostileEnv makes the test binary a sentinel group: "leader" forks a
// member bystander into its own process group, prints the member's pid and
// becomes a bystander itself; "leader-exit" does the same and then exits,
// leaving the group without its leader.
const hostileEnv = "HERMES_CHAOS_HOSTILE"

func init() {
	if addr := os.Getenv(squatEnv); addr != "" {
		squat(addr)
	}
	mode := os.Getenv(hostileEnv)
	if mode == "" {
		return
	}
	c := exec.Command(os.Args[0], "member")
	c.Env = append(os.Environ(), hostileEnv+"=", bystanderEnv+"=1")
	c.Stdin = os.Stdin // the test's pipe: it lives until the test closes it
	if err := c.Start(); err != nil {
		os.Exit(3)
	}
	os.Stdout.WriteString(strconv.Itoa(c.Process.Pid) + "\n")
	if mode == "leader-exit" {
		os.Exit(0)
	}
	pidns.Bystander()
}

// squatEnv makes the test binary bind the unix socket it names and answer
// every client with a fake "running", as another user squatting it would.
const squatEnv = "HERMES_CHAOS_SQUAT"

func squat(addr string) {
	ln, err := net.Listen("unix", addr)
	if err != nil {
		os.Exit(3)
	}
	_ = os.Chmod(addr, 0o777)
	os.Stdout.WriteString("bound\n")
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(0)
		}
		_, _ = c.Write([]byte(`{"ok":true,"status":{"state":"running","reason":"squatter"}}` + "\n"))
		c.Close()
	}
}

// sentinel is a process, or a leader and a member of one process group,
// that the supervisor must never signal: each exits pidns.Signalled on any
// catchable signal and 0 when the test closes its stdin.
type sentinel struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	id     procstate.Identity
	member int // 0 unless started as a group
}

type sentinelOpts struct {
	group      bool // a leader with a member in its group
	leaderExit bool // the leader exits at once
	cred       *syscall.Credential
	env        []string
	pid        int // take exactly this pid (pidns.StartAt)
}

func startSentinel(t *testing.T, o sentinelOpts) *sentinel {
	t.Helper()
	exe := os.Args[0]
	if o.cred != nil {
		exe = testdir.OpenCopy(t, "chaos.test")
	}
	cmd := exec.Command(exe, "sentinel")
	cmd.Env = append(os.Environ(), o.env...)
	cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0")
	switch {
	case o.leaderExit:
		cmd.Env = append(cmd.Env, hostileEnv+"=leader-exit")
	case o.group:
		cmd.Env = append(cmd.Env, hostileEnv+"=leader")
	default:
		cmd.Env = append(cmd.Env, bystanderEnv+"=1")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: o.cred}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out io.ReadCloser
	if o.group || o.leaderExit {
		out, _ = cmd.StdoutPipe()
	}
	if o.pid != 0 {
		err = pidns.StartAt(cmd, o.pid)
	} else {
		err = cmd.Start()
	}
	if err != nil {
		t.Fatal(err)
	}
	s := &sentinel{cmd: cmd, stdin: stdin}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if s.member != 0 {
			_ = syscall.Kill(s.member, syscall.SIGKILL)
		}
	})
	if out != nil {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			t.Fatalf("sentinel group: %v", err)
		}
		s.member, _ = strconv.Atoi(strings.TrimSpace(line))
	}
	if o.leaderExit {
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s.id = settled(t, cmd.Process.Pid)
	return s
}

// settled reads pid's identity once it runs the test binary's body.
func settled(t *testing.T, pid int) procstate.Identity {
	t.Helper()
	p := procstate.NewProber(procstate.Options{StartTolerance: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		id, err := p.Inspect(ctx, pid)
		if err == nil && len(id.Argv) == 2 && id.StartTime != nil {
			return id
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pid %d never settled: %+v, %v", pid, id, err)
		case <-time.After(time.Millisecond):
		}
	}
}

// untouched ends the sentinel and fails unless every process of it exited
// 0 of its own accord: a caught signal exits 42, SIGKILL shows as a signal.
func (s *sentinel) untouched(t *testing.T) {
	t.Helper()
	s.stdin.Close()
	if s.cmd.ProcessState == nil {
		if err := s.cmd.Wait(); err != nil {
			t.Fatalf("sentinel %d was signalled: %v", s.cmd.Process.Pid, err)
		}
	}
	if s.member != 0 {
		// Its leader gone, the member is ours: this test is the
		// namespace's init.
		var ws unix.WaitStatus
		if _, err := unix.Wait4(s.member, &ws, 0, nil); err != nil {
			t.Fatalf("wait for member %d: %v", s.member, err)
		}
		if !ws.Exited() || ws.ExitStatus() != 0 {
			t.Fatalf("member %d of the sentinel group was signalled: %v", s.member, ws)
		}
	}
}

func nonce() (string, string) {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	n := hex.EncodeToString(b)
	sum := sha256.Sum256([]byte(n))
	return n, hex.EncodeToString(sum[:])
}

func writeState(t *testing.T, h *home, st *supervisor.Status) {
	t.Helper()
	b, _ := json.Marshal(st)
	if err := os.WriteFile(h.SupervisorState(), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func child(id procstate.Identity, hash string) *supervisor.Child {
	return &supervisor.Child{PID: id.PID, StartTime: id.StartTime, Argv: id.Argv, StartedAt: time.Now(), NonceHash: hash}
}

func bootID(t *testing.T) string {
	b, err := procstate.BootID()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// superviseOnce runs a supervisor over h until its own gateway is healthy,
// stops it, and checks it adopted nothing and stopped cleanly.
func superviseOnce(t *testing.T, h *home, foreign int) {
	t.Helper()
	sup := h.start(t, "run", "--demo")
	st := h.waitHealthy(t, sup, foreign)
	if st.Child.Adopted {
		t.Fatalf("the supervisor adopted %+v", st.Child)
	}
	_ = sup.cmd.Process.Signal(syscall.SIGTERM)
	if code := sup.exited(t, 30*time.Second); code != 0 {
		t.Fatalf("supervisor exited %d:\n%s", code, sup.out)
	}
}

// secret is a root-only file outside the home whose bytes must never change.
func secret(t *testing.T) (string, []byte) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "root-only")
	data := []byte("root only: must never change\n")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p, data
}

func sameBytes(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s changed: %q, %v", path, got, err)
	}
}

// within runs f and fails if it takes longer than d: hostile files used to
// hang the supervisor.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s hung for %v", what, d)
	}
}

var nobodyCred = &syscall.Credential{Uid: nobody, Gid: nobody}

// TestHostile attacks the supervisor as someone who can start processes,
// write files where it reads or bind its socket first: forged and stale
// state files naming pid 1, a group leader, another user's process; pid
// reuse into a group leader; forged environment tags; symlinks under a
// root supervisor; FIFO, device and huge files; a squatted socket; a full
// or read-only home. Each try ends with no sentinel signalled and every
// file outside the home byte for byte the same. It runs in a private PID
// and mount namespace, where pid 1 is this test and mounts stay private.
func TestHostile(t *testing.T) {
	if !inPIDNSRun(t, "TestHostile") {
		return
	}
	if !pidns.Available() {
		t.Skip(pidns.Why())
	}
	root := os.Geteuid() == 0 && os.Getenv("HERMES_CHAOS_USERNS") == ""
	tests := []struct {
		name     string
		realRoot bool // runs helpers as another user
		try      func(t *testing.T, h *home)
	}{
		{"forged state naming pid 1 (this test, the namespace's init)", false, func(t *testing.T, h *home) {
			init := settledAny(t, 1)
			s := startSentinel(t, sentinelOpts{group: true})
			_, hash := nonce()
			writeState(t, h, &supervisor.Status{State: supervisor.Running, BootID: bootID(t), NonceHash: hash, Child: child(init, hash), Command: init.Argv})
			superviseOnce(t, h, 1)
			s.untouched(t)
		}},
		{"forged state naming a group leader, argv and start time copied", false, func(t *testing.T, h *home) {
			s := startSentinel(t, sentinelOpts{group: true})
			writeState(t, h, &supervisor.Status{State: supervisor.Running, Child: child(s.id, "")})
			superviseOnce(t, h, s.id.PID)
			s.untouched(t)
		}},
		{"forged state naming another user's process", true, func(t *testing.T, h *home) {
			s := startSentinel(t, sentinelOpts{cred: nobodyCred})
			_, hash := nonce()
			writeState(t, h, &supervisor.Status{State: supervisor.Running, BootID: bootID(t), NonceHash: hash, Child: child(s.id, hash)})
			superviseOnce(t, h, s.id.PID)
			s.untouched(t)
		}},
		{"state of another boot naming a process that carries its nonce", false, func(t *testing.T, h *home) {
			n, hash := nonce()
			s := startSentinel(t, sentinelOpts{group: true, env: []string{"HERMES_HOME=" + h.Home, supervisor.EnvNonce + "=" + n}})
			writeState(t, h, &supervisor.Status{State: supervisor.Running, BootID: "another-boot", NonceHash: hash, Child: child(s.id, hash), Command: s.id.Argv})
			superviseOnce(t, h, s.id.PID)
			s.untouched(t)
		}},
		{"pid of a SIGKILLed supervisor's gateway reused by a group leader that exits", false, func(t *testing.T, h *home) {
			pid := orphanedPID(t, h, 0)
			s := startSentinel(t, sentinelOpts{leaderExit: true, pid: pid})
			superviseOnce(t, h, pid)
			s.untouched(t)
		}},
		{"forged tags: HERMES_SUPERVISOR of a dead supervisor, a nonce no state file has", false, func(t *testing.T, h *home) {
			n, _ := nonce()
			s := startSentinel(t, sentinelOpts{group: true, env: []string{"HERMES_HOME=" + h.Home,
				supervisor.EnvSupervisor + "=4194000:12345", supervisor.EnvNonce + "=" + n}})
			superviseOnce(t, h, s.id.PID)
			s.untouched(t)
		}},
		{"symlinks at the supervisor lock and state file, root supervisor", false, func(t *testing.T, h *home) {
			target, data := secret(t)
			if err := os.Symlink(target, filepath.Join(h.Home, "hermes-supervisor.lock")); err != nil {
				t.Fatal(err)
			}
			out, code := h.exec("run", "--demo")
			if code == 0 || !strings.Contains(out, "hermes-supervisor.lock") {
				t.Fatalf("run over a linked supervisor lock: exit %d\n%s", code, out)
			}
			sameBytes(t, target, data)
			if err := os.Remove(filepath.Join(h.Home, "hermes-supervisor.lock")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, h.SupervisorState()); err != nil {
				t.Fatal(err)
			}
			superviseOnce(t, h, 0)
			sameBytes(t, target, data)
		}},
		{"FIFO, /dev/zero and a 2 GiB sparse file as state and config file", false, func(t *testing.T, h *home) {
			for _, make := range []func(p string) error{
				func(p string) error { return unix.Mkfifo(p, 0o644) },
				func(p string) error { return os.Symlink("/dev/zero", p) },
				func(p string) error { return os.WriteFile(p, nil, 0o644) },
			} {
				cfg := filepath.Join(h.dir, "config.json")
				for _, p := range []string{h.SupervisorState(), cfg} {
					_ = os.Remove(p)
					if err := make(p); err != nil {
						t.Fatal(err)
					}
					_ = os.Truncate(p, 2<<30)
				}
				within(t, 20*time.Second, "status over a hostile state file", func() {
					if out, code := h.exec("status"); code == 0 && strings.Contains(out, "running") {
						t.Errorf("status believed a hostile state file: %s", out)
					}
				})
				within(t, 20*time.Second, "status with a hostile config file", func() {
					out, code := h.exec("status", "--config", cfg)
					if code == 0 || !strings.Contains(out, cfg) {
						t.Errorf("a hostile config file was not refused by name: exit %d\n%s", code, out)
					}
				})
				within(t, 60*time.Second, "run over a hostile state file", func() { superviseOnce(t, h, 0) })
				_ = os.Remove(cfg)
			}
		}},
		{"squatted control socket in the fallback directory", true, func(t *testing.T, h *home) {
			// A home long enough that its socket falls back to
			// /tmp/hermes-supervisor-<uid>, a path that depends on the
			// uid alone: the supervisor runs as a uid of this try's own,
			// so that squatting its directory touches nobody else's.
			uid := uint32(3_000_000_000 + mrand.N(1_000_000_000))
			long := filepath.Join(h.dir, strings.Repeat("h", 100))
			if err := os.Mkdir(long, 0o700); err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{long, h.LockDir} {
				if err := os.Chown(d, int(uid), int(uid)); err != nil {
					t.Fatal(err)
				}
			}
			for _, d := range []string{filepath.Dir(bin), filepath.Dir(h.dir), h.dir} {
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			h.Home = long
			h.cred = &syscall.Credential{Uid: uid, Gid: uid}
			squat := filepath.Join("/tmp", "hermes-supervisor-"+strconv.FormatUint(uint64(uid), 10))
			if err := os.Mkdir(squat, 0o777); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(squat) })
			_ = os.Chmod(squat, 0o777)
			_ = os.Chown(squat, 65534, 65534)
			// The socket's name depends on the home alone.
			addr := filepath.Join(squat, filepath.Base(ctlsock.Address(long)))
			sq := exec.Command(testdir.OpenCopy(t, "chaos.test"))
			sq.Env = append(os.Environ(), squatEnv+"="+addr)
			sq.SysProcAttr = &syscall.SysProcAttr{Credential: nobodyCred}
			out, _ := sq.StdoutPipe()
			if err := sq.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sq.Process.Kill(); _ = sq.Wait() })
			if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "bound\n" {
				t.Fatalf("squatter: %q %v", line, err)
			}
			// The squat must not stop supervision: run names the squatted
			// directory once, listens at a fresh private address its state
			// file names, and status and stop reach it there, never the
			// squatter.
			sup := h.start(t, "run", "--demo")
			for {
				o, code := h.exec("status")
				if strings.Contains(o, "squatter") {
					t.Fatalf("status took the squatter's answer:\n%s", o)
				}
				if code == 0 && strings.Contains(o, "running") && !strings.Contains(o, "not running") {
					break
				}
				select {
				case <-sup.done:
					t.Fatalf("run stopped over a squatted control dir: %v\n%s", sup.err, sup.out)
				case <-time.After(10 * time.Millisecond): // the next look at status
				}
			}
			waitFor(t, "run naming the squatted dir "+squat, func() bool {
				return strings.Contains(sup.out.String(), squat)
			}, func() string { return sup.out.String() })
			h.stopClean(t, sup)
		}},
		{"home full, then read-only, under a running supervisor", false, func(t *testing.T, h *home) {
			if err := unix.Mount("tmpfs", h.Home, "tmpfs", 0, "size=8m,mode=0700"); err != nil {
				t.Skipf("mount tmpfs: %v", err)
			}
			t.Cleanup(func() { _ = unix.Unmount(h.Home, unix.MNT_DETACH) })
			sup := h.start(t, "run", "--demo", "--crash-loop-max", "2", "--initial-backoff", "20ms", "--max-backoff", "100ms")
			first := h.waitHealthy(t, sup, 0)
			// Another process keeps the disk full: whatever the supervisor
			// frees (the dead gateway's files) is taken again.
			fill := filepath.Join(h.Home, "fill")
			f, err := os.Create(fill)
			if err != nil {
				t.Fatal(err)
			}
			stop, filled, full := make(chan struct{}), make(chan struct{}), make(chan struct{})
			go func() {
				defer close(filled)
				chunk := make([]byte, 4096)
				once := false
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := f.Write(chunk); err != nil {
						if !once {
							once = true
							close(full)
						}
						time.Sleep(time.Millisecond) // full: wait for space to take
					}
				}
			}()
			<-full
			_ = syscall.Kill(first.Child.PID, syscall.SIGKILL)
			h.waitChild(t, sup, "a start-up failure for a full home", func(st *supervisor.Status) bool {
				return st.State == supervisor.Backoff && st.StartupError != ""
			})
			close(stop)
			<-filled
			f.Close()
			_ = os.Remove(fill)
			second := h.waitHealthy(t, sup, first.Child.PID)
			// A read-only bind of the home over itself: the files the
			// supervisor and gateway hold open stay writable, as after a
			// remount that waited for them, but nothing new can be written.
			if err := unix.Mount(h.Home, h.Home, "", unix.MS_BIND, ""); err != nil {
				t.Fatal(err)
			}
			if err := unix.Mount("", h.Home, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
				t.Fatal(err)
			}
			_ = syscall.Kill(second.Child.PID, syscall.SIGKILL)
			h.waitChild(t, sup, "a start-up failure for a read-only home", func(st *supervisor.Status) bool {
				return st.State == supervisor.Backoff && strings.Contains(st.StartupError, "read-only")
			})
			if err := unix.Unmount(h.Home, 0); err != nil {
				t.Fatal(err)
			}
			h.waitHealthy(t, sup, second.Child.PID)
			_ = sup.cmd.Process.Signal(syscall.SIGTERM)
			if code := sup.exited(t, 30*time.Second); code != 0 {
				t.Fatalf("supervisor exited %d:\n%s", code, sup.out)
			}
		}},
	}
	tried, survived := 0, 0
	for round := 0; round < *rounds; round++ {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if tt.realRoot && !root {
					t.Skip("needs real root to run a process as another user (CI runs as root)")
				}
				tried++
				tt.try(t, newHome(t, ""))
				if !t.Failed() {
					survived++
				}
			})
		}
	}
	c := count{"10. hostile files, processes and sockets, in a private PID namespace", tried, survived,
		"forged state naming pid 1, a group leader, another user's process; state of another boot; pid reuse into a group leader whose leader exits; forged HERMES_SUPERVISOR and nonce tags; symlinked lock and state file under root; FIFO, /dev/zero and 2 GiB state and config files; a squatted socket; a full, then read-only home. Sentinels that record every signal were never signalled, a root-only file outside the home kept its bytes, status never hung, and a full or read-only home never drove the supervisor to failed"}
	if path := os.Getenv(tallyEnv); path != "" && !t.Failed() {
		b, _ := json.Marshal(c)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// settledAny reads pid's identity, whatever it runs.
func settledAny(t *testing.T, pid int) procstate.Identity {
	t.Helper()
	id, err := procstate.NewProber(procstate.Options{StartTolerance: -1}).Inspect(context.Background(), pid)
	if err != nil || id.StartTime == nil {
		t.Fatalf("inspect pid %d: %+v, %v", pid, id, err)
	}
	return id
}

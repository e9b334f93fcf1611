package procstate

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shirou/gopsutil/v4/process"
)

// TestProcfsIsGopsutils holds each /proc reading of procfs_linux.go to
// gopsutil's, which procstate used on Linux before and still uses on the
// other systems: the same argv, environment and create time for live
// processes of every shape a judge meets (ourselves, a command line with
// spaces, empty and non-UTF-8 arguments, a zombie, init, a kernel
// thread), and the same pid list.
func TestProcfsIsGopsutils(t *testing.T) {
	ctx := context.Background()
	odd := exec.Command("/bin/sh", "-c", "read x", "arg with space", "", "é\xff", "")
	odd.Env = []string{"A=1", "EMPTY=", "ODD=é\xff"}
	stdin, err := odd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := odd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = odd.Wait() })
	// Longer than procBuf, so read the slow way.
	long := exec.Command("/bin/sh", "-c", "read x", strings.Repeat("a", procBuf), strings.Repeat("b", 3*procBuf))
	long.Env = []string{"LONG=" + strings.Repeat("c", 2*procBuf)}
	longIn, err := long.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := long.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { longIn.Close(); _ = long.Wait() })
	zombie := exec.Command("/bin/sh", "-c", "exit 0")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = zombie.Wait() })
	// A zombie's files stay until it is reaped: wait until it is one.
	waitVerdict(t, NewProber(Options{StartTolerance: -1}), Identity{PID: zombie.Process.Pid}, Zombie)

	for _, c := range []struct {
		name string
		pid  int
	}{
		{"self", os.Getpid()},
		{"odd argv and environment", odd.Process.Pid},
		{"argv and environment longer than procBuf", long.Process.Pid},
		{"zombie", zombie.Process.Pid},
		{"init", 1},
		{"kernel thread", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			proc := &process.Process{Pid: int32(c.pid)}
			wantArgv, werr := proc.CmdlineSliceWithContext(ctx)
			gotArgv, gerr := cmdline(ctx, c.pid)
			if (werr != nil) != (gerr != nil) || !slices.Equal(gotArgv, wantArgv) || (gotArgv == nil) != (wantArgv == nil) {
				t.Errorf("cmdline = %q, %v; gopsutil %q, %v", gotArgv, gerr, wantArgv, werr)
			}
			wantEnv, werr := proc.EnvironWithContext(ctx)
			gotEnv, gerr := environ(ctx, c.pid)
			if (werr != nil) != (gerr != nil) || !slices.Equal(gotEnv, wantEnv) {
				t.Errorf("environ = %q, %v; gopsutil %q, %v", gotEnv, gerr, wantEnv, werr)
			}
			wantMs, werr := proc.CreateTimeWithContext(ctx)
			gotMs, gerr := createTime(ctx, c.pid)
			if (werr != nil) != (gerr != nil) || gotMs != wantMs {
				t.Errorf("createTime = %d, %v; gopsutil %d, %v", gotMs, gerr, wantMs, werr)
			}
		})
	}
	// Not only the same as gopsutil's, but what a judge needs: a middle
	// empty argument kept, bytes that are not UTF-8 kept, and the trailing
	// empty one dropped with the NULs, as gopsutil has always dropped it.
	want := []string{"/bin/sh", "-c", "read x", "arg with space", "", "é\xff"}
	if got, err := cmdline(ctx, odd.Process.Pid); err != nil || !slices.Equal(got, want) {
		t.Errorf("the odd command line read as %q, %v; want %q", got, err, want)
	}

	t.Run("pids", func(t *testing.T) {
		before, err := process.PidsWithContext(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pids(ctx)
		if err != nil {
			t.Fatal(err)
		}
		after, err := process.PidsWithContext(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Processes come and go between the three listings: ours must hold
		// every pid both of gopsutil's do, and only pids one of them does.
		for _, p := range before {
			if slices.Contains(after, p) && !slices.Contains(got, int(p)) {
				t.Errorf("pids lacks %d, which gopsutil lists before and after", p)
			}
		}
		for _, p := range got {
			if !slices.Contains(before, int32(p)) && !slices.Contains(after, int32(p)) {
				t.Errorf("pids lists %d, which gopsutil lists neither before nor after", p)
			}
		}
		if !slices.Contains(got, os.Getpid()) {
			t.Errorf("pids lacks our own pid %d", os.Getpid())
		}
	})

	t.Run("gone", func(t *testing.T) {
		gone := exec.Command("/bin/true")
		if err := gone.Run(); err != nil {
			t.Fatal(err)
		}
		for name, err := range map[string]error{
			"cmdline":    errOf(cmdline(ctx, gone.Process.Pid)),
			"environ":    errOf(environ(ctx, gone.Process.Pid)),
			"createTime": errOf(createTime(ctx, gone.Process.Pid)),
		} {
			if !errors.Is(err, ErrNoProcess) {
				t.Errorf("%s of a reaped pid: %v, want ErrNoProcess", name, err)
			}
		}
	})
}

func errOf[T any](_ T, err error) error { return err }

// TestHostProcMovesNothing is the attack gopsutil allowed: $HOST_PROC
// pointing at a directory of forged files, among them an environment that
// carries whatever a proof looks for. procstate reads the real /proc.
func TestHostProcMovesNothing(t *testing.T) {
	ctx := context.Background()
	forged := t.TempDir()
	pid := os.Getpid()
	dir := forged + "/" + strconv.Itoa(pid)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"environ": "HERMES_SUPERVISOR_NONCE=forged\x00",
		"cmdline": "forged\x00",
		"stat":    strconv.Itoa(pid) + " (forged) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0",
	} {
		if err := os.WriteFile(dir+"/"+name, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	real, err := environ(ctx, pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOST_PROC", forged)
	// The attack is real: gopsutil reads the forged environment.
	if env, err := (&process.Process{Pid: int32(pid)}).EnvironWithContext(ctx); err != nil || !slices.Contains(env, "HERMES_SUPERVISOR_NONCE=forged") {
		t.Fatalf("gopsutil under HOST_PROC read %q, %v: the forgery did not take", env, err)
	}
	if env, err := environ(ctx, pid); err != nil || !slices.Equal(env, real) {
		t.Errorf("environ under HOST_PROC read %q, %v; want our own %q", env, err, real)
	}
	if argv, err := cmdline(ctx, pid); err != nil || !slices.Equal(argv, os.Args) {
		t.Errorf("cmdline read %q, %v; want %q", argv, err, os.Args)
	}
	if ms, err := createTime(ctx, pid); err != nil || ms < 1e12 {
		t.Errorf("createTime read %d, %v: not a time this century", ms, err)
	}
}

// TestExistsBounds: only a pid in 1..MaxInt32 can exist on Linux,
// whatever kill(2) would make of the others (0 is our group, -1 every
// process, and on 64 bits MaxInt is read as -1).
func TestExistsBounds(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	reaped := cmd.Process.Pid
	p := NewProber(Options{})
	for _, c := range []struct {
		pid  int
		want bool
	}{
		{os.Getpid(), true},
		{1, true},
		{reaped, false},
		{0, false},
		{-1, false},
		{int(^uint(0) >> 1), false},
	} {
		if got := p.Exists(c.pid); got != c.want {
			t.Errorf("Exists(%d) = %v, want %v", c.pid, got, c.want)
		}
	}
}

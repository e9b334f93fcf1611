package pidns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

const marker = "HERMES_SUPERVISOR_PIDNS"

// why is set once by Main, before any test runs, and only read afterwards.
var why = "pidns.Main was not called from TestMain"

func runMain(m *testing.M) {
	if os.Getenv(marker) == "probe" {
		os.Exit(0)
	}
	if os.Getenv(marker) == "inside" {
		if err := setupInside(); err != nil {
			fmt.Fprintf(os.Stderr, "pidns: %v\n", err)
			os.Exit(2)
		}
		why = ""
		os.Exit(m.Run())
	}
	if os.Getenv(marker) == "" {
		code, err := reexec()
		if err == nil {
			os.Exit(code)
		}
		why = "no private PID namespace: " + err.Error()
	}
	os.Exit(m.Run())
}

func reexec() (int, error) {
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Args[0] = os.Args[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), marker+"=inside")
	attr := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() != 0 {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	return 0, err
}

func setupInside() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	// Go's first exec forks a probe child (checkClonePidfd) that would take
	// the next pid; spend it now.
	probe := exec.Command("/proc/self/exe")
	probe.Env = append(os.Environ(), marker+"=probe")
	return probe.Run()
}

func available() bool { return why == "" }

func whyNot() string { return why }

func startAt(cmd *exec.Cmd, pid int) error {
	if !Available() {
		return fmt.Errorf("start at pid %d: %s", pid, why)
	}
	f, err := os.OpenFile("/proc/sys/kernel/ns_last_pid", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN) //nolint:errcheck // closing releases it too
	if _, err := f.WriteString(strconv.Itoa(pid - 1)); err != nil {
		return fmt.Errorf("write ns_last_pid: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	if got := cmd.Process.Pid; got != pid {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("wanted pid %d, got %d (is it taken?)", pid, got)
	}
	return nil
}

//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

type machine struct {
	cpu, kernel, goVersion string
	cores                  int
	memory                 string
	speed                  hostSpeed
}

// hostSpeed is how fast the host answered a few plain calls as the run
// began: the same machine type has had days two to three times slower at
// everything the sweeps and restarts do (a fresh VM whose disk was still
// fetched, a busy neighbour), and a reader comparing two runs needs to
// know which kind of day each had.
type hostSpeed struct {
	create, unlink, syscall time.Duration // per call; zero if unmeasured
}

// measureHostSpeed times creating and removing hostSpeedFiles empty files
// in a new temporary directory, and a million getppid calls.
func measureHostSpeed() hostSpeed {
	var h hostSpeed
	dir, err := os.MkdirTemp("", "hsbench-host")
	if err != nil {
		return h
	}
	defer os.RemoveAll(dir)
	name := func(i int) string { return filepath.Join(dir, strconv.Itoa(i)) }
	t0 := time.Now()
	for i := range hostSpeedFiles {
		fd, err := unix.Open(name(i), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return h
		}
		unix.Close(fd)
	}
	create := time.Since(t0) / hostSpeedFiles
	t0 = time.Now()
	for i := range hostSpeedFiles {
		if unix.Unlink(name(i)) != nil {
			return h
		}
	}
	h.create, h.unlink = create, time.Since(t0)/hostSpeedFiles
	const calls = 1000000
	t0 = time.Now()
	for range calls {
		unix.Getppid()
	}
	h.syscall = time.Since(t0) / calls
	return h
}

const hostSpeedFiles = 2000

// String says what the host's calls cost, or that they were not measured.
func (h hostSpeed) String() string {
	if h.create == 0 {
		return "not measured"
	}
	return fmt.Sprintf("an empty file created in %s and removed in %s, a bare system call (getppid) in %s",
		h.create.Round(100*time.Nanosecond), h.unlink.Round(100*time.Nanosecond), h.syscall)
}

func describeMachine() machine {
	m := machine{cores: runtime.NumCPU(), goVersion: runtime.Version(), speed: measureHostSpeed()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	if out, err := exec.Command("uname", "-srm").Output(); err == nil {
		m.kernel = strings.TrimSpace(string(out))
	}
	if st, err := statusFields("/proc/meminfo"); err == nil {
		m.memory = trim(float64(st["MemTotal"])/(1<<20), 1) + " GiB"
	}
	return m
}

// toolVersion asks a peer supervisor for its package version, for the table.
func toolVersion(pkg string) string {
	out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", pkg).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

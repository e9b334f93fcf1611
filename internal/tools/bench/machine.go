//go:build linux

package main

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
)

type machine struct {
	cpu, kernel, goVersion string
	cores                  int
	memory                 string
}

func describeMachine() machine {
	m := machine{cores: runtime.NumCPU(), goVersion: runtime.Version()}
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

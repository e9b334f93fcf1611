//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// cpuTimes is the first line of /proc/stat: every CPU's time since boot,
// in clock ticks, and the part of it the hypervisor ran something else
// while this VM wanted to run (steal).
type cpuTimes struct {
	total, steal uint64
	ok           bool
}

// readCPUTimes reads /proc/stat; ok is false where it cannot.
func readCPUTimes() cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	return parseCPUTimes(b)
}

// parseCPUTimes reads the "cpu" line: user nice system idle iowait irq
// softirq steal guest guest_nice. guest and guest_nice are counted in
// user and nice already, so they are left out of the total.
func parseCPUTimes(b []byte) cpuTimes {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return cpuTimes{}
	}
	var t cpuTimes
	for i, s := range f[1:min(len(f), 9)] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return cpuTimes{}
		}
		t.total += v
		if i == 7 {
			t.steal = v
		}
	}
	t.ok = true
	return t
}

// stealShare is the share of CPU time stolen between two readings, as a
// fraction; ok is false when either reading failed or no time passed.
func stealShare(from, to cpuTimes) (share float64, ok bool) {
	if !from.ok || !to.ok || to.total <= from.total || to.steal < from.steal {
		return 0, false
	}
	return float64(to.steal-from.steal) / float64(to.total-from.total), true
}

// steal is what the hypervisor took during each section of a run and
// during all of it: the host-speed line says how fast the host was as the
// run began, this how much of the run it was busy elsewhere. Two full
// runs of the same code an hour apart on this machine type measured the
// idle CPU with the watchdog at 5.72 and 8.5 ms per minute, and the
// restart at 1.03 and 1.16 times its floor.
type steal struct {
	from     cpuTimes // as the run began
	sections []sectionSteal
	run      sectionSteal
}

// stealHeading begins the line that gives a steal.
const stealHeading = "CPU time the hypervisor gave elsewhere while this VM wanted it (steal, from /proc/stat)"

// begin marks the start of the run.
func (s *steal) begin() { s.from = readCPUTimes() }

// end measures the whole run, from begin.
func (s *steal) end() { s.run.share, s.run.ok = stealShare(s.from, readCPUTimes()) }

type sectionSteal struct {
	name  string
	share float64
	ok    bool
}

// measure runs f and records the steal during it under name.
func (s *steal) measure(name string, f func() error) error {
	from := readCPUTimes()
	err := f()
	share, ok := stealShare(from, readCPUTimes())
	s.sections = append(s.sections, sectionSteal{name, share, ok})
	return err
}

// String says what was stolen, overall and in each section.
func (s steal) String() string {
	if !s.run.ok {
		return "not measured"
	}
	var parts []string
	for _, sec := range s.sections {
		if sec.ok {
			parts = append(parts, fmt.Sprintf("%s %.1f%%", sec.name, 100*sec.share))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%.1f%% of the CPU time during the run", 100*s.run.share)
	}
	return fmt.Sprintf("%.1f%% of the CPU time during the run (%s)", 100*s.run.share, strings.Join(parts, ", "))
}

//go:build linux

package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

type report struct {
	cfg     config
	started time.Time
	machine machine
	restart []latency
	sweep   []sweepResult
	unlink  unlinkResult
	power   powerResult
	idle    idleResult
	hang    hangResult
	flood   floodResult
	goBench string
	// breakdown, phases and scale: sections 1a, 1b and 8.
	breakdown breakdownResult
	phases    phasesResult
	scale     scaleResult
	steal     steal
}

const (
	targetRatio   = 1.1
	targetDance   = 2.0
	targetPerFile = 20 * time.Microsecond
	targetRSSKB   = 10 * 1024
	targetCPU     = 5 * time.Millisecond
)

var versions = map[string]string{"runit runsv": "runit", "s6-supervise": "s6", "supervisord": "supervisor"}

func (r *report) latency(name string) *latency {
	for i := range r.restart {
		if r.restart[i].name == name {
			return &r.restart[i]
		}
	}
	return nil
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

func (r *report) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	m := r.machine
	p("# Benchmarks\n\n")
	p("Written by `make bench` (`go run ./internal/tools/bench`) on %s; it took %s.\n", r.started.UTC().Format("2006-01-02 15:04 MST"), time.Since(r.started).Round(time.Second))
	p("Machine: %s, %d cores, %s, %s, %s. The machine is shared, so read spreads, not single numbers;\n", m.cpu, m.cores, m.memory, m.kernel, m.goVersion)
	p("nothing here is asserted by `make test`. How fast the host was as the run began: %s (compare these before comparing two runs).\n", m.speed)
	p("%s: %s. A section whose steal is several times another run's is a busier hour, not slower code.\n\n", stealHeading, r.steal)

	floor, hs := r.latency("floor"), r.latency("hermes-supervisor")
	ratio := float64(hs.sum.Med) / float64(floor.sum.Med)
	// The cost of one more file is the slope between neighbouring N; the
	// total of a small sweep is mostly the fixed cost of the home's files.
	var worst sweepResult
	linear := true
	for i := 1; i < len(r.sweep); i++ {
		m := r.sweep[i].marginal
		if m > worst.marginal {
			worst = r.sweep[i]
		}
		// Linear: the slope does not keep growing with N (2x slack for noise).
		if i > 1 && m > 2*r.sweep[i-1].marginal {
			linear = false
		}
	}
	p("## Targets\n\n| What | Target | Measured | |\n|---|---|---|---|\n")
	p("| Restart after SIGKILL, median | ≤ %.1f× the floor | %s ms vs %s ms: **%.2f×**%s%s | %s |\n", targetRatio, ms(hs.sum.Med), ms(floor.sum.Med), ratio, interval(hs, floor), r.peers(floor), met(ratio <= targetRatio))
	if demo := r.latency("hermes-supervisor + demo gateway"); demo != nil && demo.sum.N > 0 {
		d := float64(demo.sum.Med) / float64(floor.sum.Med)
		p("| Restart with the demo gateway's file dance, median | ≤ %.0f× the floor | %s ms: **%.2f×**%s | %s |\n", targetDance, ms(demo.sum.Med), d, interval(demo, floor), met(d <= targetDance))
	}
	p("| Sweep, per file | linear, ≤ %s | at most %s per added file%s (slope of the median between neighbouring N = %d…%d); the bare system calls of that sweep, %s | %s |\n", targetPerFile, worst.marginal.Round(100*time.Nanosecond), worst.slopeInterval(), r.sweep[0].n, r.sweep[len(r.sweep)-1].n, worst.floorMarginal.Round(100*time.Nanosecond), met(linear && worst.marginal <= targetPerFile))
	p("| Power-loss layout to a healthy gateway | healthy | median %s ms; the non-sweeping loop: %s | %s |\n", ms(r.power.sum.Med), loopVerdict(r.power), met(!r.power.loopHealthy))
	p("| Idle RSS | ≤ 10 MB | %.1f MiB (peak %.1f MiB) | %s |\n", float64(r.idle.rssKB)/1024, float64(r.idle.hwmKB)/1024, met(r.idle.rssKB <= targetRSSKB))
	p("| Idle CPU | ≤ %s per minute | %s per minute, %d wake-ups in %s (%s) | %s |\n", targetCPU, r.idle.cpuPerMinute.Round(10*time.Microsecond), r.idle.switches, r.idle.window, r.idle.windows(), met(r.idle.cpuPerMinute <= targetCPU))
	p("%s", r.hang.targets())
	p("%s", r.flood.targets())
	p("%s\n", r.scale.targets())

	r.restartSection(&b)
	r.breakdownSection(&b)
	r.phasesSection(&b)
	r.sweepSection(&b)
	p("\n![Sweep time against N, log-log](sweep-cost.svg)\n\n")
	if u := r.unlink; u.files > 0 {
		p("These rounds remove files moments after they were written, before the kernel has written them back. ")
		p("A plain unlink of a small file cost %s here when fresh and %s once written back (%d files each, after `syncfs`): ", u.fresh.Round(100*time.Nanosecond), u.flushed.Round(100*time.Nanosecond), u.files)
		p("what freeing blocks already on disk adds, which a file system that discards blocks as it frees them waits for (ext4 without a journal, mounted with `discard`, does). ")
		p("Stale files a power cut leaves are on disk, so on such a disk a sweep pays that difference for each file it removes, on top of the times above.\n\n")
	}

	p("## 3. Power loss: from the leftover files to a healthy gateway\n\n")
	p("The layout a power cut leaves: `gateway.pid` and `gateway.lock` naming the old gateway's pid, now reused by a live unrelated process, and five scoped locks naming it (the demo gateway's `demo-bot-token` among them). ")
	p("Timed from starting `hermes-supervisor run --demo` until `gateway_state.json` says `running` for a live pid other than the reused one, %d times, each in a fresh home.\n\n", r.power.sum.N)
	p("| | n | min ms | median ms | p90 ms | max ms |\n|---|---|---|---|---|---|\n")
	p("| hermes-supervisor | %d | %s | %s | %s | %s |\n\n", r.power.sum.N, ms(r.power.sum.Min), ms(r.power.sum.Med), ms(r.power.sum.P90), ms(r.power.sum.Max))
	p("The same layout under a plain restart loop that does not sweep (what `Restart=on-failure` with systemd's default `RestartSec=100ms` does): %s.\n", loopVerdict(r.power))
	p("Exit codes seen: %s. Its last words: `%s`.\n\n", exitCounts(r.power.loopExits), r.power.loopLast)
	p("The process that reused the pid was alive at the end of every run: nothing signalled it.\n\n")

	p("## 4. Idle cost\n\n")
	p("`hermes-supervisor run --demo` with a healthy gateway, watched after 5 s of settling: %s. The table shows the median window. ", r.idle.windows())
	p("CPU is the sum of `/proc/<pid>/task/*/schedstat` run time (nanoseconds, unlike the 10 ms ticks of `/proc/<pid>/stat`); wake-ups are context switches of all threads.\n\n")
	p("| RSS | peak RSS | threads | CPU in window | CPU per minute | wake-ups in window |\n|---|---|---|---|---|---|\n")
	p("| %.1f MiB | %.1f MiB | %d | %s | %s | %d |\n\n", float64(r.idle.rssKB)/1024, float64(r.idle.hwmKB)/1024, r.idle.threads, r.idle.cpu.Round(time.Microsecond), r.idle.cpuPerMinute.Round(time.Microsecond), r.idle.switches)
	p("Liveness waits on the child (`waitid`) and the control socket on `accept`; there is no polling timer.\n\n")

	if r.goBench != "" {
		p("## 5. Go micro-benchmarks\n\n")
		p("`go test -run '^$' -bench . -benchmem -count 5 ./lockstore ./procstate`, verbatim (feed two runs to `benchstat`):\n\n```\n%s```\n", r.goBench)
		if err := os.WriteFile(filepath.Join(dir, "bench-go.txt"), []byte(r.goBench), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "restart-latency.svg"), []byte(r.restartSVG()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "sweep-cost.svg"), []byte(r.sweepSVG()), 0o644); err != nil {
		return err
	}
	b.WriteString(r.hang.markdown())
	b.WriteString(r.flood.markdown())
	r.scaleSection(&b)
	return os.WriteFile(filepath.Join(dir, "benchmarks.md"), []byte(b.String()), 0o644)
}

// sweepSection writes section 2's text and table, without its plot.
func (r *report) sweepSection(b *strings.Builder) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## 2. Judging and sweeping N stale lock files\n\n")
	p("N scoped locks in a fresh lock dir: a third name dead pids, a third live unrelated processes with another start time (reused pids), a third five live demo gateways. ")
	p("Dead and reused files each name a distinct identity, so no verdict comes from the per-sweep cache; the live gateways' do, as they would in life. ")
	p("Timed: `Store.Scan` (judge only, as `sweep --dry-run`) and `Store.SweepEach` (judge; lock, rename into the sweep's bin `.hermes-supervisor-sweep/` (a bin per goroutine: the first moves into the bin, the others into `1/`, `2/`, ... in it), check it is the inode judged, unlink; each batch's entries counted as they come: `Store.Sweep`, which the `sweep` command calls, also holds every entry to the end and sorts them for its table, which at 100 000 files cost 1.5–2µs per file more in-process). Every round is checked: all stale files gone, every live gateway's file kept. ")
	p("Sweeps of 64 files or more judge and remove files on GOMAXPROCS goroutines (here %d), each batch read, then each file judged and, if stale, removed at once by the goroutine that judged it; the lock dir is listed 2048 names at a time, so a sweep holds a batch of names, not the whole directory. \"Per added file\" is the slope of the median between neighbouring N: the fixed cost of reading the home's own files is not spread over the lock files. The rounds of every N take turns through the section (an N with 5 rounds runs one in each fifth of it; at least 5, since with medians of 3 the 10 000→100 000 slope's 95%% bootstrap interval spanned 19.6–26.4µs in the run of 2026-11-29 14:38), as the restart rows do, since a slope is a difference of medians: run one N after another, a slow spell of the host that fell on one N's rounds alone moved a slope by a quarter between two runs. Beside each slope is its 95%% bootstrap interval, drawn as the restart rows' are (the rounds of two N with as many rounds, which ran side by side, drawn together): where the slope could as well have landed with other rounds of the same code on the same host. The verdict is on the slope itself.\n\n", r.machine.cores)
	p("After each round, the floor: the same layout in a fresh lock dir, listed and swept with nothing but the system calls a sweep makes, on as many goroutines. Per file an `openat`, `fstat` and `read`, as judging reads it, and a `close` of each file kept; per stale file, on the descriptor judging opened, then an `fstatat` of its name, `flock`, `renameat` into the goroutine's own bin, `fstatat`, `unlinkat` and `close`, as the removal does. No /proc read, no parsing, no rules: what a sweep that keeps these checks cannot beat on this host.\n\n")
	p("| N | rounds | swept / kept | scan median ms | sweep min ms | sweep median ms | sweep p90 ms | sweep max ms | median / N | per added file | floor median ms | floor per added file |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range r.sweep {
		marginal := ""
		if s.marginal > 0 {
			marginal = s.marginal.Round(100*time.Nanosecond).String() + s.slopeInterval()
		}
		floorMarginal := ""
		if s.floorMarginal != 0 {
			floorMarginal = s.floorMarginal.Round(100 * time.Nanosecond).String()
		}
		p("| %d | %d | %d / %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", s.n, s.rounds, s.swept, s.kept, ms(s.scan.Med), ms(s.sum.Min), ms(s.sum.Med), ms(s.sum.P90), ms(s.sum.Max), s.perFile.Round(100*time.Nanosecond), marginal, ms(s.floor.Med), floorMarginal)
	}
}

func (r *report) restartSection(b *strings.Builder) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	floor := r.latency("floor")
	p("## 1. Restart latency after SIGKILL\n\n")
	p("Each supervisor runs the same child (`internal/tools/bench/child`: it writes its pid to a file through a rename and blocks; it imports almost nothing, so its start-up is cheap and the floor is low). ")
	p("The bench lets the child run %s (runsv and s6 hold back the restart of a child that ran under 1 s), SIGKILLs it and times until the file names a new live pid (woken by inotify on its directory: Go cannot sleep under a millisecond, which cut samples into 1 ms steps before), %d times per supervisor. The supervisors run side by side and their children are killed in turn, one at a time, so that a host that slows down for a while slows every row alike, and in a new order each round (seeded): what a kill follows, a peer's restart that has just woken both CPUs or a second of idle, moved a row's median by a fifth, and a fixed order favoured the same rows every round. ", r.cfg.gap, r.cfg.kills)
	p("hermes-supervisor runs with its default policy except `--reset-after %s`, so that each kill comes after what it counts as a healthy run: ", (r.cfg.gap * 3 / 5).String())
	p("the first restart after a healthy run is never delayed by backoff. It still sweeps the home and lock dir before every start and releases the dead child's files after every exit. ")
	p("The interval beside a ratio in the targets table is a bootstrap of these kills (the rounds of kills drawn again with replacement, 10 000 times, a row's kill and the floor's of one round together, since they shared a moment of the host): where the median ratio could as well have landed with %d other rounds of the same code on the same host. The verdict is on the median ratio itself.\n\n", r.cfg.kills)
	p("| Supervisor | Version | n | min ms | median ms | p90 ms | max ms | median × floor | How |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, l := range r.restart {
		if l.skipped != "" {
			p("| %s | | 0 | | | | | | %s |\n", l.name, l.skipped)
			continue
		}
		p("| %s | %s | %d | %s | %s | %s | %s | %.2f | %s |\n", l.name, toolVersion(versions[l.name]), l.sum.N, ms(l.sum.Min), ms(l.sum.Med), ms(l.sum.P90), ms(l.sum.Max),
			float64(l.sum.Med)/float64(floor.sum.Med), l.note)
	}
	p("\n![Restart latency, log scale](restart-latency.svg)\n\n")

}

// interval says how far the median ratio of l to floor could move with
// other draws of the same kills (ratioInterval).
func interval(l, floor *latency) string {
	lo, hi := ratioInterval(l.samples, floor.samples, 10000)
	if lo == 0 {
		return ""
	}
	return fmt.Sprintf(" (95%% bootstrap interval %.2f–%.2f×)", lo, hi)
}

// peers names the other supervisors' ratios in the same run, side by side.
func (r *report) peers(floor *latency) string {
	var parts []string
	for _, name := range []string{"runit runsv", "s6-supervise", "supervisord"} {
		if l := r.latency(name); l != nil && l.skipped == "" && l.sum.N > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f×", name, float64(l.sum.Med)/float64(floor.sum.Med)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func loopVerdict(p powerResult) string {
	if p.loopHealthy {
		return fmt.Sprintf("healthy after %d attempts", p.loopAttempts)
	}
	return fmt.Sprintf("never healthy in %s, %d attempts", p.loopFor, p.loopAttempts)
}

func exitCounts(m map[int]int) string {
	var codes []int
	for c := range m {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d × exit %d", m[c], c))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// svg helpers: a plain chart with a log axis is all the plots need.
type logAxis struct{ lo, hi, x0, x1 float64 }

func (a logAxis) at(v float64) float64 {
	return a.x0 + (math.Log10(v)-math.Log10(a.lo))/(math.Log10(a.hi)-math.Log10(a.lo))*(a.x1-a.x0)
}

func decades(lo, hi float64) []float64 {
	var out []float64
	for v := math.Pow(10, math.Floor(math.Log10(lo))); v <= hi*1.0001; v *= 10 {
		if v >= lo*0.9999 {
			out = append(out, v)
		}
	}
	return out
}

func (r *report) restartSVG() string {
	var rows []latency
	for _, l := range r.restart {
		if l.skipped == "" {
			rows = append(rows, l)
		}
	}
	const w, left, right, rowH, top = 760.0, 230.0, 30.0, 34.0, 40.0
	h := top + rowH*float64(len(rows)) + 50
	lo, hi := 1.0, 1.0
	for _, l := range rows {
		lo = math.Min(lo, float64(l.sum.Min)/1e6)
		hi = math.Max(hi, float64(l.sum.Max)/1e6)
	}
	lo, hi = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
	ax := logAxis{lo, hi, left, w - right}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="22" font-size="14" font-weight="bold">Restart latency after SIGKILL (ms, log scale): bar = median, line = min to p90</text>`+"\n", left-200)
	for _, v := range decades(lo, hi) {
		x := ax.at(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#ddd"/><text x="%.1f" y="%.0f" text-anchor="middle">%g</text>`+"\n", x, top-5, x, h-40, x, h-25, v)
	}
	for i, l := range rows {
		y := top + float64(i)*rowH
		color := "#8aa"
		if strings.HasPrefix(l.name, "hermes-supervisor") {
			color = "#2a7"
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end">%s</text>`+"\n", left-8, y+rowH/2+4, l.name)
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.1f" height="%.0f" fill="%s"/>`+"\n", left, y+7, ax.at(float64(l.sum.Med)/1e6)-left, rowH-14, color)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="black" stroke-width="2"/>`+"\n", ax.at(float64(l.sum.Min)/1e6), y+rowH/2, ax.at(float64(l.sum.P90)/1e6), y+rowH/2)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f">%s</text>`+"\n", math.Min(ax.at(float64(l.sum.P90)/1e6)+6, w-right-40), y+rowH/2-6, ms(l.sum.Med))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func (r *report) sweepSVG() string {
	const w, h, left, right, top, bottom = 640.0, 420.0, 70.0, 30.0, 40.0, 60.0
	nlo, nhi := float64(r.sweep[0].n), float64(r.sweep[len(r.sweep)-1].n)
	tlo, thi := math.Inf(1), 0.0
	for _, s := range r.sweep {
		tlo = math.Min(tlo, float64(s.sum.Min)/1e6)
		thi = math.Max(thi, float64(s.sum.Max)/1e6)
	}
	thi = math.Max(thi, nhi*float64(targetPerFile)/1e6)
	tlo, thi = math.Pow(10, math.Floor(math.Log10(tlo))), math.Pow(10, math.Ceil(math.Log10(thi)))
	xa := logAxis{nlo, nhi, left, w - right}
	ya := logAxis{tlo, thi, h - bottom, top}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="22" font-size="14" font-weight="bold">Sweep of N stale lock files: median time (ms), log-log</text>`+"\n", left)
	for _, v := range decades(nlo, nhi) {
		x := xa.at(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#ddd"/><text x="%.1f" y="%.0f" text-anchor="middle">%g</text>`+"\n", x, top, x, h-bottom, x, h-bottom+18, v)
	}
	for _, v := range decades(tlo, thi) {
		y := ya.at(v)
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#ddd"/><text x="%.0f" y="%.1f" text-anchor="end">%g</text>`+"\n", left, y, w-right, y, left-6, y+4, v)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">N files</text>`+"\n", (left+w-right)/2, h-20)
	// The target line: 50 µs per file.
	t := float64(targetPerFile) / 1e6
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#c44" stroke-dasharray="6 4"/><text x="%.1f" y="%.1f" fill="#c44">target: %s per file</text>`+"\n",
		xa.at(nlo), ya.at(nlo*t), xa.at(nhi), ya.at(nhi*t), xa.at(nlo)+6, ya.at(nlo*t)-8, targetPerFile)
	var pts []string
	for _, s := range r.sweep {
		x, y := xa.at(float64(s.n)), ya.at(float64(s.sum.Med)/1e6)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x, ya.at(float64(s.sum.Min)/1e6), x, ya.at(float64(s.sum.Max)/1e6))
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="#2a7"/><text x="%.1f" y="%.1f">%s ms</text>`+"\n", x, y, x+8, y+14, ms(s.sum.Med))
	}
	fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#2a7" stroke-width="2"/>`+"\n", strings.Join(pts, " "))
	b.WriteString("</svg>\n")
	return b.String()
}

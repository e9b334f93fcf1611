//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSpliceHang(t *testing.T) {
	h := hangResult{
		interval: 2 * time.Second,
		detect:   summary{N: 8, Min: 2500 * time.Millisecond, Med: 2510 * time.Millisecond, P90: 2520 * time.Millisecond, Max: 2530 * time.Millisecond},
		restart:  summary{N: 8, Min: 9 * time.Millisecond, Med: 10 * time.Millisecond, P90: 11 * time.Millisecond, Max: 12 * time.Millisecond},
		idle: idleResult{window: time.Minute, cpu: 2 * time.Millisecond, cpuPerMinute: 2 * time.Millisecond, switches: 61, threads: 8, woken: 1, rssKB: 9000,
			perMinute: []time.Duration{9 * time.Millisecond, 2 * time.Millisecond, 1500 * time.Microsecond}},
		floor: idleResult{window: time.Minute, cpu: time.Millisecond, cpuPerMinute: time.Millisecond, switches: 60, threads: 1, woken: 1, rssKB: 1000,
			perMinute: []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}},
	}
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	full := "# Benchmarks\n\n## Targets\n\n| What | Target | Measured | |\n|---|---|---|---|\n" +
		"| Idle CPU | ≤ 5ms per minute | 390µs | met |\n" +
		"| Hang to a new ready gateway, worst of 8 | old | old | met |\n" +
		"| Idle CPU, watchdog on at 2s | old | old | **missed** |\n\n" +
		"## 5. Go micro-benchmarks\n\nkept\n\n## 6. Hang detection\n\nold text, **missed**\n"
	if err := os.WriteFile(path, []byte(full), 0o644); err != nil {
		t.Fatal(err)
	}
	// Twice: a second splice must not duplicate rows or sections.
	for range 2 {
		if err := spliceHang(path, h, time.Now(), []string{"-only", "hang"}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, want := range []string{"| Idle CPU | ≤ 5ms per minute | 390µs | met |\n| Hang to a new ready gateway", "## 5. Go micro-benchmarks\n\nkept\n\n## 6. Hang detection\n", "2ms per minute, 61 wake-ups in 1m0s (median of 3 windows of 1m0s: 9ms, 2ms, 1.5ms); a bare C receiver of the same keep-alives (the floor, section 6): 1ms per minute | met |\n\n## 5.",
		"| floor: `floor/notify.c` | 1ms | 1ms |  | 60 |"} {
		if !strings.Contains(doc, want) {
			t.Errorf("missing %q in:\n%s", want, doc)
		}
	}
	for _, once := range []string{"## 6. Hang detection", "| Hang to a new ready gateway", "| Idle CPU, watchdog on", "measured on their own"} {
		if n := strings.Count(doc, once); n != 1 {
			t.Errorf("%q %d times in:\n%s", once, n, doc)
		}
	}
	if strings.Contains(doc, "old") || strings.Contains(doc, "missed") {
		t.Errorf("old hang text kept:\n%s", doc)
	}
}

// TestFloorNote checks a run without a C compiler says so where the floor
// would be, rather than show a floor of zero.
func TestFloorNote(t *testing.T) {
	h := hangResult{interval: 2 * time.Second, idle: idleResult{window: time.Minute}, floorSkipped: "no C compiler (cc) on this host"}
	if got := h.floorNote(); !strings.Contains(got, "not measured: no C compiler") {
		t.Fatalf("floorNote() = %q", got)
	}
	if md := h.markdown(); strings.Contains(md, "| floor:") || strings.Contains(md, "watched the same way (one window") || !strings.Contains(md, "it was not measured in this run: no C compiler") {
		t.Fatalf("a skipped floor has a row or no reason:\n%s", md)
	}
}

func TestMedianWindow(t *testing.T) {
	ms := func(v ...int) []idleWindow {
		ws := make([]idleWindow, len(v))
		for i, x := range v {
			ws[i] = idleWindow{perMinute: time.Duration(x) * time.Millisecond, switches: i}
		}
		return ws
	}
	for _, tc := range []struct {
		name string
		ws   []idleWindow
		want int // the switches of the window picked: its place in time
	}{
		{"one", ms(7), 0},
		{"the middle of three, not the last", ms(5, 9, 2), 0},
		{"the higher middle of four", ms(4, 1, 3, 2), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := medianWindow(tc.ws); got.switches != tc.want {
				t.Fatalf("picked window %d (%s), want %d", got.switches, got.perMinute, tc.want)
			}
		})
	}
}

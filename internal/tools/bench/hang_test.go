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
		idle:     idleResult{window: time.Minute, cpu: 2 * time.Millisecond, cpuPerMinute: 2 * time.Millisecond, switches: 61, threads: 8, woken: 1, rssKB: 9000},
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
	for _, want := range []string{"| Idle CPU | ≤ 5ms per minute | 390µs | met |\n| Hang to a new ready gateway", "## 5. Go micro-benchmarks\n\nkept\n\n## 6. Hang detection\n", "2ms per minute, 61 wake-ups in 1m0s | met |\n\n## 5."} {
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

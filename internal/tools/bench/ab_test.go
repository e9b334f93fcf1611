//go:build linux

package main

import (
	"strings"
	"testing"
	"time"
)

// TestABSection checks that every build after A is set against A, and A
// and the floor against nothing but the floor.
func TestABSection(t *testing.T) {
	row := func(name string, v ...int) latency {
		s := durations(time.Millisecond, v...)
		return latency{name: name, samples: s, sum: summarize(s)}
	}
	ls := []latency{
		row("floor", 2, 2, 2, 2),
		row("A: a", 4, 4, 4, 4),
		row("B: b", 2, 2, 2, 2),
		row("C: c", 8, 8, 8, 8),
	}
	var b strings.Builder
	abSection(&b, config{kills: 4}, ls)
	got := b.String()
	for _, want := range []string{
		"| floor | 4 | 2.00 | 2.00 | 2.00 | 2.00 | 1.000 (95% bootstrap interval 1.00–1.00×) |  |",
		"| A: a | 4 | 4.00 | 4.00 | 4.00 | 4.00 | 2.000 (95% bootstrap interval 2.00–2.00×) |  |",
		"| B: b | 4 | 2.00 | 2.00 | 2.00 | 2.00 | 1.000 (95% bootstrap interval 1.00–1.00×) | **0.500** (95% bootstrap interval 0.50–0.50×) |",
		"| C: c | 4 | 8.00 | 8.00 | 8.00 | 8.00 | 4.000 (95% bootstrap interval 4.00–4.00×) | **2.000** (95% bootstrap interval 2.00–2.00×) |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no row %q in\n%s", want, got)
		}
	}
}

func TestABLetter(t *testing.T) {
	for i, want := range map[int]string{0: "A", 1: "B", 25: "Z", 26: "27"} {
		if got := abLetter(i); got != want {
			t.Errorf("abLetter(%d) = %q, want %q", i, got, want)
		}
	}
}

//go:build linux

package main

import (
	"testing"
	"time"
)

// durations is v, each in units of unit.
func durations(unit time.Duration, v ...int) []time.Duration {
	ds := make([]time.Duration, len(v))
	for i, x := range v {
		ds[i] = time.Duration(x) * unit
	}
	return ds
}

// us is v, each in microseconds.
func us(v ...int) []time.Duration { return durations(time.Microsecond, v...) }

func TestSummarize(t *testing.T) {
	ms := func(v ...int) []time.Duration { return durations(time.Millisecond, v...) }
	tests := []struct {
		name string
		in   []time.Duration
		want summary
	}{
		{"empty", nil, summary{}},
		{"one", ms(7), summary{1, 7e6, 7e6, 7e6, 7e6}},
		{"unsorted", ms(9, 1, 5), summary{3, 1e6, 5e6, 9e6, 9e6}},
		{"ten", ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), summary{10, 1e6, 6e6, 9e6, 10e6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tt.in...)
			if got := summarize(tt.in); got != tt.want {
				t.Errorf("summarize(%v) = %+v, want %+v", tt.in, got, tt.want)
			}
			for i := range in {
				if in[i] != tt.in[i] {
					t.Fatalf("summarize reordered its input: %v", tt.in)
				}
			}
		})
	}
}

func TestMs(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{1234 * time.Microsecond, "1.23"},
		{12340 * time.Microsecond, "12.3"},
		{1234 * time.Millisecond, "1234"},
	} {
		if got := ms(tt.d); got != tt.want {
			t.Errorf("ms(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestRatioInterval(t *testing.T) {
	floor := us(1800, 1700, 1900, 2100, 1600, 1850, 1950, 1750, 2000, 1820)
	t.Run("a constant ratio has no spread", func(t *testing.T) {
		double := make([]time.Duration, len(floor))
		for i, d := range floor {
			double[i] = 2 * d
		}
		lo, hi := ratioInterval(us(3000, 3000, 3000), us(1500, 1500), 500)
		if lo != 2 || hi != 2 {
			t.Errorf("constant samples: [%v, %v], want [2, 2]", lo, hi)
		}
		// Each kill twice its round's floor: drawn by rounds, every draw
		// says 2; drawn each on its own, the host's spread shows.
		if lo, hi := ratioInterval(double, floor, 2000); lo != 2 || hi != 2 {
			t.Errorf("twice the floor, kill by kill: [%v, %v], want [2, 2]", lo, hi)
		}
		if lo, hi := ratioInterval(double[:9], floor, 2000); lo > 2 || hi < 2 || lo == hi || lo < 1.5 || hi > 2.7 {
			t.Errorf("twice the floor, rows of other lengths: [%v, %v], want an interval around 2", lo, hi)
		}
	})
	t.Run("it holds the median ratio and is ordered", func(t *testing.T) {
		num := us(2300, 2100, 2600, 2400, 2200, 2900, 2250, 2350, 2500, 2150)
		lo, hi := ratioInterval(num, floor, 2000)
		r := float64(summarize(num).Med) / float64(summarize(floor).Med)
		if !(lo <= r && r <= hi) || lo >= hi {
			t.Errorf("interval [%v, %v] for a median ratio of %v", lo, hi, r)
		}
		if lo2, hi2 := ratioInterval(num, floor, 2000); lo2 != lo || hi2 != hi {
			t.Errorf("a second draw gave [%v, %v], the first [%v, %v]: not reproducible", lo2, hi2, lo, hi)
		}
	})
	t.Run("no samples", func(t *testing.T) {
		if lo, hi := ratioInterval(nil, floor, 100); lo != 0 || hi != 0 {
			t.Errorf("no samples: [%v, %v], want [0, 0]", lo, hi)
		}
	})
}

func TestSlopeInterval(t *testing.T) {
	small := us(540, 560, 510, 600, 530, 580, 520, 570, 550, 590)
	t.Run("a constant step has no spread", func(t *testing.T) {
		// Each round of the bigger N 1800 µs above the round beside it:
		// drawn by rounds, every draw says 1800/90 = 20 µs per file.
		big := make([]time.Duration, len(small))
		for i, d := range small {
			big[i] = d + 1800*time.Microsecond
		}
		if lo, hi := slopeInterval(big, small, 90, 2000); lo != 20*time.Microsecond || hi != 20*time.Microsecond {
			t.Errorf("a constant step: [%v, %v], want [20µs, 20µs]", lo, hi)
		}
	})
	t.Run("it holds the slope and is ordered", func(t *testing.T) {
		big := us(2800, 2300, 3100, 2500, 2900, 2400, 3600, 2700, 2600, 3000)
		lo, hi := slopeInterval(big, small, 90, 2000)
		slope := (summarize(big).Med - summarize(small).Med) / 90
		if !(lo <= slope && slope <= hi) || lo >= hi {
			t.Errorf("interval [%v, %v] for a slope of %v", lo, hi, slope)
		}
	})
	t.Run("formatted beside the slope, and nothing without one", func(t *testing.T) {
		s := sweepResult{marginal: 25 * time.Microsecond, marginalLo: 22 * time.Microsecond, marginalHi: 28100 * time.Nanosecond}
		if got, want := s.slopeInterval(), " (95% bootstrap interval 22µs–28.1µs)"; got != want {
			t.Errorf("slopeInterval() = %q, want %q", got, want)
		}
		if got := (sweepResult{}).slopeInterval(); got != "" {
			t.Errorf("the first N, which has no slope: %q", got)
		}
	})
}

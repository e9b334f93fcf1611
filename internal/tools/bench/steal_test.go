//go:build linux

package main

import (
	"math"
	"testing"
)

func TestStealShare(t *testing.T) {
	tests := []struct {
		name     string
		from, to string
		want     float64
		wantOK   bool
	}{
		{"a tenth stolen", "cpu  100 0 100 700 0 0 0 100 0 0\n", "cpu  200 0 200 1400 0 0 0 200 0 0\n", 0.1, true},
		{"guest left out", "cpu  100 0 0 0 0 0 0 0 0 0\n", "cpu  150 0 0 40 0 0 0 10 50 0\n", 0.1, true},
		{"no steal column", "cpu  100 0 100 700\n", "cpu  200 0 200 1400\n", 0, false},
		{"not the cpu line", "intr 1 2 3 4 5 6 7 8 9\n", "intr 1 2 3 4 5 6 7 8 9\n", 0, false},
		{"no time passed", "cpu  1 1 1 1 1 1 1 1 0 0\n", "cpu  1 1 1 1 1 1 1 1 0 0\n", 0, false},
		{"a number garbled", "cpu  1 x 1 1 1 1 1 1 0 0\n", "cpu  2 2 2 2 2 2 2 2 0 0\n", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := stealShare(parseCPUTimes([]byte(tt.from)), parseCPUTimes([]byte(tt.to)))
			if ok != tt.wantOK || math.Abs(got-tt.want) > 1e-9 {
				t.Fatalf("stealShare = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestStealString(t *testing.T) {
	tests := []struct {
		name string
		s    steal
		want string
	}{
		{"unmeasured", steal{}, "not measured"},
		{"a run alone, as -only prints it", steal{run: sectionSteal{share: 0.034, ok: true}}, "3.4% of the CPU time during the run"},
		{"sections, one unmeasured", steal{
			run:      sectionSteal{share: 0.1, ok: true},
			sections: []sectionSteal{{"sweep cost", 0.172, true}, {"idle cost", 0, false}, {"output flood", 0.27, true}},
		}, "10.0% of the CPU time during the run (sweep cost 17.2%, output flood 27.0%)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.String(); got != tt.want {
				t.Fatalf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

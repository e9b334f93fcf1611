//go:build linux

package main

import (
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var ds []time.Duration
		for _, x := range v {
			ds = append(ds, time.Duration(x)*time.Millisecond)
		}
		return ds
	}
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

//go:build linux

package main

import (
	"slices"
	"strconv"
	"time"
)

// summary is the spread of one set of samples.
type summary struct {
	N                  int
	Min, Med, P90, Max time.Duration
}

func summarize(ds []time.Duration) summary {
	if len(ds) == 0 {
		return summary{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[int(q*float64(len(s)-1)+0.5)] }
	return summary{N: len(s), Min: s[0], Med: at(0.5), P90: at(0.9), Max: s[len(s)-1]}
}

// ms formats d in milliseconds with enough digits for sub-millisecond spreads.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v < 10:
		return trim(v, 2)
	case v < 100:
		return trim(v, 1)
	}
	return trim(v, 0)
}

func trim(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }

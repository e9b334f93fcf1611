//go:build linux

package main

import (
	"math/rand/v2"
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

// ratioInterval is the 95% bootstrap interval of the ratio of the
// medians of num and den (see bootInterval). Twenty kills a row leave the
// median ratio a few hundredths either way on a shared host; the interval
// says how many.
func ratioInterval(num, den []time.Duration, rounds int) (lo, hi float64) {
	return bootInterval(num, den, rounds, func(a, b time.Duration) float64 { return float64(a) / float64(b) })
}

// slopeInterval is the 95% bootstrap interval of the slope per added file
// from prev's median to cur's, dn files apart (see bootInterval): a slope
// is a difference of two medians, and the interval says how far it could
// as well have landed with other rounds of the same code on the same host.
func slopeInterval(cur, prev []time.Duration, dn, rounds int) (lo, hi time.Duration) {
	l, h := bootInterval(cur, prev, rounds, func(a, b time.Duration) float64 { return float64(a-b) / float64(dn) })
	return time.Duration(l), time.Duration(h)
}

// bootInterval is the 95% bootstrap interval of stat(median of a, median
// of b): samples are drawn again with replacement, as many as there were,
// rounds times, and the middle 95% of the stats so drawn is kept. The
// bench runs its rows and sizes in turn, so a[i] and b[i] share a moment
// of the host; sets of one length are drawn by those rounds, the same
// indexes for both, and other sets each on its own. The draws are seeded,
// so a report is reproducible from its samples.
func bootInterval(a, b []time.Duration, rounds int, stat func(a, b time.Duration) float64) (lo, hi float64) {
	if len(a) == 0 || len(b) == 0 || rounds <= 0 {
		return 0, 0
	}
	rng := rand.New(rand.NewPCG(1, 2))
	paired := len(a) == len(b)
	da, db := make([]time.Duration, len(a)), make([]time.Duration, len(b))
	stats := make([]float64, rounds)
	for r := range stats {
		for i := range da {
			j := rng.IntN(len(a))
			da[i] = a[j]
			if paired {
				db[i] = b[j]
			}
		}
		if !paired {
			for i := range db {
				db[i] = b[rng.IntN(len(b))]
			}
		}
		stats[r] = stat(summarize(da).Med, summarize(db).Med)
	}
	slices.Sort(stats)
	at := func(q float64) float64 { return stats[int(q*float64(rounds-1)+0.5)] }
	return at(0.025), at(0.975)
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

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
// medians of num and den: kills are drawn again with replacement, as many
// as there were, rounds times, and the middle 95% of the ratios so drawn
// is kept. The bench kills its rows in turn, so num[i] and den[i] share a
// moment of the host; sets of one length are drawn by those rounds, the
// same indexes for both, and other sets each on its own. Twenty kills a
// row leave the median ratio a few hundredths either way on a shared
// host; the interval says how many. The draws are seeded, so a report is
// reproducible from its samples.
func ratioInterval(num, den []time.Duration, rounds int) (lo, hi float64) {
	if len(num) == 0 || len(den) == 0 || rounds <= 0 {
		return 0, 0
	}
	rng := rand.New(rand.NewPCG(1, 2))
	paired := len(num) == len(den)
	a, b := make([]time.Duration, len(num)), make([]time.Duration, len(den))
	ratios := make([]float64, rounds)
	for r := range ratios {
		for i := range a {
			j := rng.IntN(len(num))
			a[i] = num[j]
			if paired {
				b[i] = den[j]
			}
		}
		if !paired {
			for i := range b {
				b[i] = den[rng.IntN(len(den))]
			}
		}
		ratios[r] = float64(summarize(a).Med) / float64(summarize(b).Med)
	}
	slices.Sort(ratios)
	at := func(q float64) float64 { return ratios[int(q*float64(rounds-1)+0.5)] }
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

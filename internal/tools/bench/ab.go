//go:build linux

package main

import (
	"context"
	"fmt"
	"strings"
)

// abLatency measures two hermes-supervisor builds, -supervisor and
// -against, and the floor, killing their children in turn as section 1
// does: the A/B a change to the restart path needs, since twenty kills of
// each, minutes apart, cannot tell a few tens of µs from the host's drift.
func abLatency(ctx context.Context, c config, self, child string) ([]latency, error) {
	return measureInTurn(ctx, c, []contender{
		floorContender(self, child),
		{name: "A: " + c.supervisor, note: "-supervisor", cmd: supervised(c, c.supervisor, child)},
		{name: "B: " + c.against, note: "-against", cmd: supervised(c, c.against, child)},
	})
}

// abSection prints the A/B: each row against the floor, and B against A,
// each median ratio with its 95% interval drawn by rounds of kills.
func abSection(b *strings.Builder, c config, ls []latency) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	floor, a, bb := &ls[0], &ls[1], &ls[2]
	p("## A/B: restart after SIGKILL, %d rounds, killed in turn\n\n", c.kills)
	p("| Build | n | min ms | median ms | p90 ms | max ms | median × floor |\n|---|---|---|---|---|---|---|\n")
	for _, l := range []*latency{floor, a, bb} {
		p("| %s | %d | %s | %s | %s | %s | %.3f%s |\n", l.name, l.sum.N, ms(l.sum.Min), ms(l.sum.Med), ms(l.sum.P90), ms(l.sum.Max),
			float64(l.sum.Med)/float64(floor.sum.Med), interval(l, floor))
	}
	p("\nB / A, median: **%.3f×**%s\n", float64(bb.sum.Med)/float64(a.sum.Med), interval(bb, a))
}

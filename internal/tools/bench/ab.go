//go:build linux

package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// abLatency measures hermes-supervisor builds, -supervisor (A) and each
// of -against (B, C, ...), and the floor, killing their children in turn
// as section 1 does: the A/B a change to the restart path needs, since
// twenty kills of each, minutes apart, cannot tell a few tens of µs from
// the host's drift. Several builds in one run share the host's moments,
// where separate A/B runs each get their own.
func abLatency(ctx context.Context, c config, self, child string) ([]latency, error) {
	cs := []contender{
		floorContender(self, child),
		{name: "A: " + c.supervisor, cmd: supervised(c, c.supervisor, child)},
	}
	for i, b := range c.against {
		cs = append(cs, contender{name: abLetter(i+1) + ": " + b, cmd: supervised(c, b, child)})
	}
	return measureInTurn(ctx, c, cs)
}

// abLetter names the i-th build of an A/B (from 0): A to Z, then its
// number from 1.
func abLetter(i int) string {
	if i < 26 {
		return string(rune('A' + i))
	}
	return strconv.Itoa(i + 1)
}

// abSection prints the A/B: each row against the floor, and B against A,
// each median ratio with its 95% interval drawn by rounds of kills.
func abSection(b *strings.Builder, c config, ls []latency) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	floor, a := &ls[0], &ls[1]
	p("## A/B: restart after SIGKILL, %d rounds, killed in turn\n\n", c.kills)
	p("| Build | n | min ms | median ms | p90 ms | max ms | median × floor | median × A |\n|---|---|---|---|---|---|---|---|\n")
	for i := range ls {
		l := &ls[i]
		vsA := ""
		if i > 1 {
			vsA = fmt.Sprintf("**%.3f**%s", float64(l.sum.Med)/float64(a.sum.Med), interval(l, a))
		}
		p("| %s | %d | %s | %s | %s | %s | %.3f%s | %s |\n", l.name, l.sum.N, ms(l.sum.Min), ms(l.sum.Med), ms(l.sum.P90), ms(l.sum.Max),
			float64(l.sum.Med)/float64(floor.sum.Med), interval(l, floor), vsA)
	}
}

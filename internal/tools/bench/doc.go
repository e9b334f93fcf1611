// Command bench measures hermes-supervisor against its peers and writes
// docs/benchmarks.md with SVG plots. `make bench` runs it; it is a program
// and not a test so that nothing in `make test` depends on timing.
//
// Every supervisor runs the same small child (./child), built at start, so
// restart latency measures supervisors and not gateway start-up. The
// bench binary doubles as the floor ("bench floor CHILD FILE"): the bare
// restart loop the others are compared with.
//
// It runs on Linux only: it reads /proc and runs Linux peers (runit, s6,
// supervisord).
package main

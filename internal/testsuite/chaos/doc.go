// Package chaos holds the fault-injection suite: real supervisors and
// gateways, killed, raced, starved and fed broken files at random moments,
// each scenario counted as tried and survived. `make test` runs it with small
// counts; `make chaos` runs the full counts and writes docs/reliability.md.
package chaos

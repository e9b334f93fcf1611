package supervisor

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hermes-agent/hermes-supervisor/platform/proctree"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// EnvNonce carries, in every gateway's environment, the secret nonce of the
// supervisor run that started it. Only its owner and root can read a
// process's environment, and the state file keeps only the nonce's hash, so
// a successor that finds the nonce in a live process's own environment
// knows a supervisor of this home started it; no file can forge that.
const EnvNonce = "HERMES_SUPERVISOR_NONCE"

// ErrNotProven reports a process the supervisor may not signal: nothing
// proves that a supervisor of this home started it.
var ErrNotProven = errors.New("not provably started by a supervisor of this home")

// newNonce returns a fresh per-run nonce and its hash for the state file.
func newNonce() (nonce, hash string) {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	nonce = hex.EncodeToString(b)
	return nonce, hashNonce(nonce)
}

func hashNonce(nonce string) string {
	sum := sha256.Sum256([]byte(nonce))
	return hex.EncodeToString(sum[:])
}

// proof is what the state file of a predecessor of this boot lets us check
// against a live process: the hashes of the nonces its gateways carry.
type proof struct {
	prober *procstate.Prober
	self   int
	home   string
	hashes []string
}

// carrier is a live process that carries one of a proof's nonces.
type carrier struct {
	id   procstate.Identity
	pgid int    // 0 where the OS has no process groups
	hash string // the hash of the nonce it carries
}

// check proves pid: alive, not init, not us, with a known start time, and
// with this home and one of the nonces in its own environment, read
// between two reads of its start time so a pid reused meanwhile shows.
func (p proof) check(ctx context.Context, pid int) (carrier, error) {
	c := carrier{id: procstate.Identity{PID: pid}}
	switch {
	case len(p.hashes) == 0:
		return c, fmt.Errorf("pid %d: %w: no state file of this boot names a nonce", pid, ErrNotProven)
	case pid <= 1 || pid == p.self:
		return c, fmt.Errorf("pid %d: %w: never init or the supervisor itself", pid, ErrNotProven)
	}
	id, err := p.prober.Inspect(ctx, pid)
	if err != nil {
		return c, fmt.Errorf("pid %d: %w: %w", pid, ErrNotProven, err)
	}
	if id.StartTime == nil {
		return c, fmt.Errorf("pid %d: %w: start time unknown", pid, ErrNotProven)
	}
	env, err := p.prober.Environ(ctx, pid)
	if err != nil {
		return c, fmt.Errorf("pid %d: %w: environment unreadable: %w", pid, ErrNotProven, err)
	}
	var nonce, home string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case EnvNonce:
			nonce = v
		case "HERMES_HOME":
			home = v
		}
	}
	switch {
	case nonce == "" || !slices.Contains(p.hashes, hashNonce(nonce)):
		return c, fmt.Errorf("pid %d: %w: its environment carries no nonce of the state file", pid, ErrNotProven)
	case home != p.home:
		return c, fmt.Errorf("pid %d: %w: HERMES_HOME is %q", pid, ErrNotProven, home)
	}
	again, err := p.prober.Inspect(ctx, pid)
	if err != nil || !again.Same(id) {
		return c, fmt.Errorf("pid %d: %w: it exited while being read", pid, ErrNotProven)
	}
	c.id, c.hash = id, hashNonce(nonce)
	if pg, err := proctree.ProcessGroup(pid); err == nil {
		c.pgid = pg
	}
	return c, nil
}

// checkRecorded proves that pid is the very process a record names: the
// nonce as for check, and the recorded start time and command line exactly.
func (p proof) checkRecorded(ctx context.Context, rec procstate.Identity) (carrier, error) {
	if rec.StartTime == nil {
		return carrier{id: rec}, fmt.Errorf("%s: %w: the record has no start time", rec, ErrNotProven)
	}
	c, err := p.check(ctx, rec.PID)
	if err != nil {
		return c, err
	}
	switch {
	case *c.id.StartTime != *rec.StartTime:
		return c, fmt.Errorf("%s: %w: the pid now has start time %d", rec, ErrNotProven, *c.id.StartTime)
	case !procstate.ArgvMatches(rec.Argv, c.id.Argv):
		// Matches, not equals: a record written while the child was
		// still inside execve holds the command we started, which a
		// script's interpreter line rewrites.
		return c, fmt.Errorf("%s: %w: the pid now runs %q", rec, ErrNotProven, c.id.Argv)
	}
	return c, nil
}

// carriers lists, oldest first, the live processes the proof proves.
func (p proof) carriers(ctx context.Context) ([]carrier, error) {
	if len(p.hashes) == 0 {
		return nil, nil
	}
	pids, err := p.prober.Pids(ctx)
	if err != nil {
		return nil, err
	}
	var out []carrier
	for _, pid := range pids {
		if c, err := p.check(ctx, pid); err == nil {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b carrier) int { return cmp.Compare(*a.id.StartTime, *b.id.StartTime) })
	return out, nil
}

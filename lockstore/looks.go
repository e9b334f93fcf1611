package lockstore

// One look at each pid the records of a judgement name, taken as Hermes'
// rules (hermesrules.go) ask for it: the process's state and start time
// always, its command line only where a start time does not already
// settle a record.

import (
	"context"
	"errors"
	"sync"

	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// procFacts is one look at a pid: what _pid_exists,
// _get_process_start_time, _read_process_cmdline and _process_is_stopped
// read of it (procstate.Prober.Look), or why it could not be looked at.
type procFacts struct {
	live procstate.Live
	err  error
	// argvUnread: the command line was not read (procstate.Prober.Glance),
	// since no record's start time left it to decide (see rules.live).
	argvUnread bool
}

// errNotLooked: no look was taken at the pid, so nothing is known of it.
var errNotLooked = errors.New("process not looked at")

// A looker looks at each pid once for one judgement, when a rule first
// asks about it, however many goroutines judge: a lock dir of stale files
// names the same few live pids over and over. Looking as the rules ask,
// rather than at every pid named before any rule runs, lets a sweep
// judge and act on each file at once. A looker is made only once every
// record it judges has been read: a look judges only records read
// before it (see judgeLockFiles).
type looker struct {
	ctx    context.Context
	prober *procstate.Prober
	mu     sync.Mutex
	pids   map[int]*pidLook
}

// pidLook is a looker's look at one pid: the glance, then the command
// line if a rule needs it, each taken once.
type pidLook struct {
	glanced, argvRead sync.Once
	facts             procFacts
	argv              []string
}

func newLooker(ctx context.Context, p *procstate.Prober) *looker {
	return &looker{ctx: ctx, prober: p, pids: map[int]*pidLook{}}
}

// look returns the look at pid, its command line read too if withArgv
// and the process was there to read.
func (k *looker) look(pid int, withArgv bool) procFacts {
	k.mu.Lock()
	p := k.pids[pid]
	if p == nil {
		p = &pidLook{}
		k.pids[pid] = p
	}
	k.mu.Unlock()
	p.glanced.Do(func() {
		p.facts.live, p.facts.err = k.prober.Glance(k.ctx, pid)
		p.facts.argvUnread = p.facts.err == nil
	})
	f := p.facts
	if withArgv && f.argvUnread {
		p.argvRead.Do(func() { p.argv = k.prober.Argv(k.ctx, pid) })
		f.live.Argv, f.argvUnread = p.argv, false
	}
	return f
}

// look is what r knows of pid: its fixed looks (a test's), else its
// looker's, else nothing.
func (r *rules) look(pid int, withArgv bool) procFacts {
	if p, ok := r.procs[pid]; ok {
		return p
	}
	if r.looks != nil {
		return r.looks.look(pid, withArgv)
	}
	return procFacts{live: procstate.Live{PID: pid}, err: errNotLooked}
}

// rules returns Hermes' rules for one judgement, looking at each pid
// once as they ask.
func (s *Store) rules(ctx context.Context) *rules {
	return &rules{home: s.layout.Home, now: s.now(), own: s.own, looks: newLooker(ctx, s.prober), expand: newHomes(ctx).expand}
}

package lockstore

// One look at each pid the records of a judgement name, taken before
// Hermes' rules (hermesrules.go) judge them: the process's state and
// start time always, its command line only where a start time does not
// already settle a record.

import (
	"context"
	"errors"

	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// procFacts is one look at a pid: what _pid_exists,
// _get_process_start_time, _read_process_cmdline and _process_is_stopped
// read of it (procstate.Prober.Look), or why it could not be looked at.
type procFacts struct {
	live procstate.Live
	err  error
	// argvUnread: the command line was not read (procstate.Prober.Glance),
	// since no record's start time left it to decide (see rulesOn).
	argvUnread bool
}

// pidsNamed lists the pids the records of fs name, each once: the pids
// to look at before the rules can judge those records.
func pidsNamed(fs ...*fileFacts) []int {
	var out []int
	seen := make(map[int]bool, len(fs)) // not slices.Contains: quadratic at 100 000 files
	for _, f := range fs {
		if f.err == nil && f.rec.pidOK && !seen[f.rec.PID] {
			seen[f.rec.PID] = true
			out = append(out, f.rec.PID)
		}
	}
	return out
}

// errNotLooked: no look was taken at the pid, so nothing is known of it.
var errNotLooked = errors.New("process not looked at")

func (r *rules) look(pid int) procFacts {
	if p, ok := r.procs[pid]; ok {
		return p
	}
	return procFacts{live: procstate.Live{PID: pid}, err: errNotLooked}
}

// lookItems is how many pids are worth a goroutine of their own when
// judging looks at them: a live process costs a read of /proc/<pid>/stat,
// and of its cmdline where that decides, 8-10 µs each for a
// multi-threaded one on the bench's host, where a lock file's read costs
// 5. The 20-odd live processes a lock dir of a hundred files names took
// half a millisecond on one goroutine, both reads each, a sixth of that
// sweep.
const lookItems = 8

// rules looks once at each pid the records of fs name and returns Hermes'
// rules over what it saw.
func (s *Store) rules(ctx context.Context, fs ...*fileFacts) *rules {
	return s.rulesOn(ctx, 1, fs...)
}

// rulesOn is rules, looking on up to w goroutines.
func (s *Store) rulesOn(ctx context.Context, w int, fs ...*fileFacts) *rules {
	pids := pidsNamed(fs...)
	looks := make([]procFacts, len(pids))
	var dead func(int) bool
	listed := false
	if len(pids) >= pidTableMin {
		dead, listed = deadByTable(ctx, s.prober)
	}
	parallelBy(w, len(pids), lookItems, func(i int) {
		if pid := pids[i]; listed && pid > 0 && dead(pid) {
			looks[i] = gone(pid)
			return
		}
		looks[i].live, looks[i].err = s.prober.Glance(ctx, pids[i])
		looks[i].argvUnread = looks[i].err == nil
	})
	procs := make(map[int]procFacts, len(pids))
	for i, pid := range pids {
		procs[pid] = looks[i]
	}
	r := &rules{home: s.layout.Home, now: s.now(), own: s.own, procs: procs, expand: newHomes(ctx).expand}
	// The command line is a second read of each live process, needed only
	// where a record's start time does not already settle it: in a lock
	// dir of stale files most live pids named are reused ones, and read
	// once.
	argvFor := make(map[int]bool)
	for _, f := range fs {
		if f.err != nil {
			continue
		}
		if p, rl := r.settled(f.rec); rl == nil && p.argvUnread {
			argvFor[f.rec.PID] = true
		}
	}
	var need []int
	for i, pid := range pids {
		if argvFor[pid] {
			need = append(need, i)
		}
	}
	parallelBy(w, len(need), lookItems, func(j int) {
		i := need[j]
		looks[i].live.Argv, looks[i].argvUnread = s.prober.Argv(ctx, pids[i]), false
	})
	for _, i := range need {
		procs[pids[i]] = looks[i]
	}
	return r
}

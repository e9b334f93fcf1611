package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

// backoffSetting is one of the restart policy's two joined settings as the
// supervisor will see it, with where it came from: a flag of run, a key of
// the config file, or the default.
type backoffSetting struct {
	name, flag, key string // "max_backoff", "--max-backoff", "restart.max_backoff"
	v               time.Duration
	fromFlag        bool
	at              *place // in the config file; nil when the file sets none
}

// backoff resolves one setting as run does (a flag the user set, else the
// file, else the default); flags is run's, nil for every other command.
func backoff(flags *pflag.FlagSet, name, flag string, fileValue supervisor.Duration, fc fileConfig, def time.Duration) backoffSetting {
	s := backoffSetting{name: name, flag: "--" + flag, key: "restart." + name, v: def}
	if flags != nil && flags.Changed(flag) {
		if d, err := flags.GetDuration(flag); err == nil {
			s.v, s.fromFlag = d, true
			return s
		}
	}
	if fileValue != 0 {
		s.v = time.Duration(fileValue)
		p := fc.at[s.key] // the zero place, with no line, if unknown
		s.at = &p
	}
	return s
}

// rank orders sources by precedence: a flag beats the file, which beats
// the default; the value of highest rank is the one to blame.
func (s backoffSetting) rank() int {
	switch {
	case s.fromFlag:
		return 2
	case s.at != nil:
		return 1
	}
	return 0
}

// how names the setting as the one who must change it sets it: a flag on
// run's command line, else the file's key.
func (s backoffSetting) how(flagSide bool) string {
	if s.fromFlag || flagSide && s.at == nil {
		return s.flag
	}
	return fmt.Sprintf("%q", s.key)
}

// checkSettings refuses, when the config file is loaded and before any
// command acts, a restart policy whose max_backoff is below its
// initial_backoff, once the file's values are merged with run's flags and
// the defaults as run merges them. Every other value of the file is checked
// as it is read (readFileConfig); this one depends on two, either of which
// may be a default the user never set, so the error names the value to
// blame (the flag, else the file's key and line:column) and where the other
// came from. Without it status and install accepted such a file and an
// installed service's run exited 1 at every start.
func (g *globals) checkSettings() error {
	def := supervisor.DefaultPolicy()
	initial := backoff(g.runFlags, "initial_backoff", "initial-backoff", g.file.Restart.InitialBackoff, g.file, def.InitialBackoff)
	maxB := backoff(g.runFlags, "max_backoff", "max-backoff", g.file.Restart.MaxBackoff, g.file, def.MaxBackoff)
	p := def
	p.InitialBackoff, p.MaxBackoff = initial.v, maxB.v
	if err := p.Validate(); !errors.Is(err, supervisor.ErrBackoffOrder) {
		// Any other refusal is of a single flag, which run's own
		// validation names.
		return nil
	}
	// Blame the value of highest precedence; max_backoff when both rank
	// alike, as the rule is stated of it.
	blamed, other, rel := maxB, initial, "below"
	if initial.rank() > maxB.rank() {
		blamed, other, rel = initial, maxB, "above"
	}
	flagSide := blamed.fromFlag
	var src string
	switch {
	case other.fromFlag:
		src = other.flag
	case other.at != nil && !flagSide:
		src = fmt.Sprintf("set at line %d, column %d", other.at.line, other.at.col)
	case other.at != nil:
		src = fmt.Sprintf("config file %s:%d:%d, %q", g.file.Path, other.at.line, other.at.col, other.key)
	default:
		src = "the default"
	}
	otherName := other.name
	if flagSide && other.at == nil {
		otherName = other.flag
	}
	msg := fmt.Sprintf("%s is %s %s, %s (%s): raise %s to %s or more, or lower %s to %s or less",
		blamed.v, rel, otherName, other.v, src, maxB.how(flagSide), initial.v, initial.how(flagSide), maxB.v)
	if flagSide {
		return fmt.Errorf("%s %s", blamed.flag, msg)
	}
	return &configError{Path: g.file.Path, Key: blamed.key, Line: blamed.at.line, Col: blamed.at.col, Msg: msg}
}

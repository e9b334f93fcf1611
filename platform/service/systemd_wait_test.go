package service

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSystemdWait runs install's wait against a systemctl that answers
// `show` with a script of states: it must end on the new run being
// active, fail at once on a failed or restarting unit (with the journal's
// lines), and fail with the last state when the wait runs out.
func TestSystemdWait(t *testing.T) {
	run := func(inv, active, sub string) string {
		return "ActiveState=" + active + "\nSubState=" + sub + "\nResult=success\nStatusText=\nInvocationID=" + inv + "\n"
	}
	tests := []struct {
		name    string
		verb    string
		states  []string // what show answers, call by call; the last repeats
		wantErr string   // "" for success
	}{
		{"restart: old run active, then the new", "restart",
			[]string{run("a", "active", "running"), run("a", "active", "running"), run("b", "activating", "start"), run("b", "active", "running")}, ""},
		{"restart: the old run's active is not enough", "restart",
			[]string{run("a", "active", "running")}, "active/running after"},
		{"start: already active", "start", []string{run("a", "active", "running")}, ""},
		{"start: from inactive", "start",
			[]string{run("a", "inactive", "dead"), run("a", "inactive", "dead"), run("b", "active", "running")}, ""},
		{"start: a failed unit runs again", "start",
			[]string{run("a", "failed", "failed"), run("a", "failed", "failed"), run("b", "activating", "start"), run("b", "active", "running")}, ""},
		{"restarting after an exit", "restart",
			[]string{"", run("b", "activating", "auto-restart")}, "activating/auto-restart"},
		{"failed", "start", []string{run("a", "inactive", "dead"), run("b", "failed", "failed")}, "failed/failed"},
		{"the new run ended", "restart", []string{"", run("b", "inactive", "dead")}, "inactive/dead"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			calls := 0
			s := Systemd{Output: func(_ context.Context, argv []string) ([]byte, error) {
				mu.Lock()
				defer mu.Unlock()
				if argv[0] == "journalctl" {
					return []byte("hermes-supervisor[1]: the reason\n"), nil
				}
				i := min(calls, len(tt.states)-1)
				calls++
				return []byte(tt.states[i]), nil
			}}
			c := Config{System: true, Wait: time.Second}
			var p Plan
			s.startAndWait(&p, c, tt.verb)
			err := p.Apply(context.Background(), func(context.Context, []string) error { return nil })
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("wait failed: %v", err)
			case tt.wantErr != "" && (!errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "the reason")):
				t.Fatalf("wait = %v, want ErrNotRunning naming %q with the journal's lines", err, tt.wantErr)
			}
		})
	}
}

// TestSystemdNotRunningShowsTheRunsOwnWords: the unit's journal can lag
// the failed process's own lines (journald under load); the error still
// carries what that process said, found by its pid.
func TestSystemdNotRunningShowsTheRunsOwnWords(t *testing.T) {
	s := Systemd{Output: func(_ context.Context, argv []string) ([]byte, error) {
		if strings.Contains(strings.Join(argv, " "), "_PID=42") {
			return []byte("hermes-supervisor: open /root: permission denied\n"), nil
		}
		return []byte("systemd[1]: hermes-supervisor.service: Failed with result 'exit-code'.\n"), nil
	}}
	err := s.notRunning(context.Background(), Config{System: true}, unitState{Active: "failed", Sub: "failed", MainPID: 42}, "")
	if !errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), "open /root: permission denied") {
		t.Fatalf("notRunning = %v: lacks the failed run's own words", err)
	}
}

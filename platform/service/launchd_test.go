//go:build !windows

package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// exitErr is how a failed launchctl looks: an exit status.
type exitErr int

func (e exitErr) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
func (e exitErr) ExitCode() int { return int(e) }

// fakeLaunchctl answers launchctl as launchd does around a reinstall: our
// job stays loaded for gone prints after bootout, and bootstrap fails with
// the given errors first. Domains ann has a session in answer print; noGUI
// takes gui/501 away (SSH, nobody logged in), noUser user/501 too.
type fakeLaunchctl struct {
	noGUI, noUser bool
	gone          int // prints of our job before it is gone
	bootstrap     []error
	calls         []string
	// loaded, when set, answers print of a job (domain/label) instead.
	loaded func(target string) ([]byte, error)
}

func (f *fakeLaunchctl) output(_ context.Context, argv []string) ([]byte, error) {
	f.calls = append(f.calls, strings.Join(argv[1:], " "))
	switch {
	case argv[1] == "print" && strings.Count(argv[2], "/") == 1:
		if (f.noGUI && strings.HasPrefix(argv[2], "gui/")) || (f.noUser && strings.HasPrefix(argv[2], "user/")) {
			return []byte("Could not find domain for port identifier"), exitErr(113)
		}
		return []byte(argv[2] + " = {"), nil
	case argv[1] == "print" && f.loaded != nil:
		return f.loaded(argv[2])
	case argv[1] == "print":
		if f.gone > 0 && strings.HasSuffix(argv[2], "/"+Label) {
			f.gone--
			return []byte("state = running"), nil
		}
		return []byte("Could not find service"), exitErr(113)
	case argv[1] == "bootstrap" && len(f.bootstrap) > 0:
		err := f.bootstrap[0]
		f.bootstrap = f.bootstrap[1:]
		return []byte("Bootstrap failed: " + err.Error()), err
	}
	return nil, nil
}

// run records the plan's commands next to the queries.
func (f *fakeLaunchctl) run(_ context.Context, argv []string) error {
	if argv[0] == "launchctl" {
		f.calls = append(f.calls, strings.Join(argv[1:], " "))
	}
	return nil
}

func annOnMac(t *testing.T) Config {
	return Config{Exe: "/usr/local/bin/hermes-supervisor", Home: "/Users/ann/.hermes", StopTimeout: 75 * time.Second,
		UserHome: testdir.New(t), UID: 501}
}

func launchdInstall(t *testing.T, f *fakeLaunchctl) error {
	t.Helper()
	p, err := Launchd{Glob: func(string) ([]string, error) { return nil, nil }, Output: f.output}.Install(annOnMac(t), false)
	if err != nil {
		return err
	}
	return p.Apply(context.Background(), f.run)
}

// A reinstall waits for the old job to leave launchd before bootstrap,
// and a bootstrap that hits the teardown race (5, or 37) is retried.
func TestLaunchdBootstrapRace(t *testing.T) {
	tests := []struct {
		name       string
		bootstrap  []error
		ok         bool
		bootstraps int
	}{
		{"first try", nil, true, 1},
		{"fails once with 5", []error{exitErr(5)}, true, 2},
		{"fails once with 37", []error{exitErr(37)}, true, 2},
		{"another error is final", []error{exitErr(1)}, false, 1},
		{"5 every time gives up", []error{exitErr(5), exitErr(5), exitErr(5), exitErr(5), exitErr(5)}, false, bootstrapTries},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeLaunchctl{gone: 2, bootstrap: tt.bootstrap}
			err := launchdInstall(t, f)
			if (err == nil) != tt.ok {
				t.Fatalf("install: %v, want ok %v; calls %q", err, tt.ok, f.calls)
			}
			n := 0
			for _, c := range f.calls {
				if strings.HasPrefix(c, "bootstrap ") {
					n++
				}
			}
			if n != tt.bootstraps {
				t.Errorf("%d bootstraps, want %d: %q", n, tt.bootstraps, f.calls)
			}
			// The old job was seen gone before the first bootstrap.
			first := -1
			for i, c := range f.calls {
				if strings.HasPrefix(c, "bootstrap ") {
					first = i
					break
				}
			}
			if first < 1 || f.calls[first-1] != "print gui/501/ai.hermes.supervisor" || f.gone != 0 {
				t.Errorf("bootstrap before the old job was gone: %q", f.calls)
			}
		})
	}
}

// Hermes' own plist has no ProcessType, and neither has ours: Background
// would throttle the gateway.
func TestPlistHasNoProcessType(t *testing.T) {
	for _, system := range []bool{false, true} {
		if p := string(mustPlist(t, ann(system))); strings.Contains(p, "ProcessType") {
			t.Errorf("plist (system %v) sets ProcessType:\n%s", system, p)
		}
	}
}

// launchd has no readiness protocol: start waits until the supervisor it
// runs says its gateway is ready, and a gateway that never is fails the
// wait, saying why.
func TestLaunchdWaitsForReadiness(t *testing.T) {
	tests := []struct {
		name     string
		notReady int // answers "not ready" before "ready"; -1: never ready
		ok       bool
	}{
		{"ready at once", 0, true},
		{"ready on the third question", 2, true},
		{"never ready", -1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked := 0
			c := Config{Exe: "/usr/local/bin/hermes-supervisor", Home: "/Users/ann/.hermes", UID: 501, Wait: 2 * time.Second,
				UserHome: testdir.New(t), Ready: func(context.Context) error {
					asked++
					if tt.notReady < 0 || asked <= tt.notReady {
						return errors.New("state starting")
					}
					return nil
				}}
			running := func(_ context.Context, argv []string) ([]byte, error) {
				return []byte("state = running\npid = 4242\n"), nil
			}
			p, err := Launchd{Output: running}.Control(c, "start")
			if err != nil {
				t.Fatal(err)
			}
			err = p.Apply(context.Background(), func(context.Context, []string) error { return nil })
			if (err == nil) != tt.ok {
				t.Fatalf("start: %v, want ok %v", err, tt.ok)
			}
			if tt.ok && asked != tt.notReady+1 {
				t.Errorf("asked the supervisor %d times, want %d", asked, tt.notReady+1)
			}
			if !tt.ok && (!errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), "its gateway not ready (state starting)")) {
				t.Errorf("start of a never-ready gateway: %v", err)
			}
		})
	}
}

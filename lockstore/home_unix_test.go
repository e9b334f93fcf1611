//go:build !windows

package lockstore

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCanonicalResolvesAsPython: hermes_home is resolved as Python's
// Path.resolve(strict=False) resolves it (each expected value is what
// Python 3.11 gives on the same layout): a ".." after a link applies to
// where the link leads, a missing component is kept and a ".." after it
// removes it, and a path that leads into a loop of links is reported as
// the error resolve() raises on it.
func TestCanonicalResolvesAsPython(t *testing.T) {
	base := t.TempDir()
	for _, d := range []string{"a/home", "a/b"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"link":  filepath.Join(base, "a", "b"),
		"rel":   "a/b",
		"chain": "link",
		"loop":  "loop",
		"ping":  "pong",
		"pong":  "ping",
		"up":    "a/b/..",
	} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	real, err := filepath.EvalSymlinks(base) // the temp dir may lie behind a link itself
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		in, want string
		loop     bool
	}{
		{in: "/link/../home", want: "/a/home"},
		{in: "/rel/../home", want: "/a/home"},
		{in: "/chain/../home", want: "/a/home"},
		{in: "/up/home", want: "/a/home"},
		{in: "/missing/../a/home", want: "/a/home"},
		{in: "/missing/x/../../a/./home/", want: "/a/home"},
		{in: "/a//b/../home", want: "/a/home"},
		{in: "/link/no/such/dir", want: "/a/b/no/such/dir"},
		{in: "/loop/home", loop: true},
		{in: "/ping/../a/home", want: "/a/home"}, // the ".." leaves the loop before resolve()'s stat
	} {
		got, ok, _ := canonical(base + tt.in)
		switch {
		case tt.loop && ok:
			t.Errorf("%s: %s, want the loop reported", tt.in, got)
		case !tt.loop && (!ok || got != real+tt.want):
			t.Errorf("%s: %s (ok %v), want %s", tt.in, got, ok, real+tt.want)
		}
	}
	if got, ok, _ := canonical("/"); got != "/" || !ok {
		t.Errorf("/: %s %v", got, ok)
	}
	if got, ok, _ := canonical("/.."); got != "/" || !ok {
		t.Errorf("/..: %s %v", got, ok)
	}
}

// TestHomeLoopKeepsTheRecord: a runtime record whose hermes_home leads
// into a loop of links is one Hermes' resolve() raises on, so get_running_pid
// removes nothing, whatever the pid now runs: kept, never swept.
func TestHomeLoopKeepsTheRecord(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop", filepath.Join(base, "loop")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		recHome, verdict string
		action           Action
	}{
		{base + "/loop/home", "unknown", ActionKeep},
		{base + "/other", "reused", ActionSweep}, // no loop: another home
	} {
		d := judgeFacts("pid-file", facts{file: rec(pidGateway, argvGateway, tt.recHome), lock: lockHeld, home: home,
			procs: procs(pidGateway, alive(argvSleep...))})
		if d.verdict.String() != tt.verdict || d.action != tt.action {
			t.Errorf("hermes_home %s: %s/%s (%s), want %s/%s", tt.recHome, d.verdict, d.action, d.reason, tt.verdict, tt.action)
		}
	}
}

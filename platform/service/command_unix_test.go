//go:build unix

package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// TestRootRunsOnlyRootsTools is the SETENV attack on install: a user whom
// sudoers lets run `hermes-supervisor install --system` with SETENV puts a
// directory of theirs first on PATH, holding a systemctl of their own, and
// sets LD_PRELOAD. As root, Command must run root's systemctl, with neither
// their directory on its PATH nor their loader variables.
func TestRootRunsOnlyRootsTools(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the attack is on root's install, and the user's directory must be chowned to them")
	}
	dir := testdir.New(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tool := func(d, says string) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		script := "#!/bin/sh\necho " + says + "\n/usr/bin/env\n"
		if err := os.WriteFile(filepath.Join(d, "systemctl"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	users := filepath.Join(dir, "user-bin")
	tool(users, "USERS")
	if err := os.Chown(users, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(users, "systemctl"), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	roots := filepath.Join(dir, "root-bin")
	tool(roots, "ROOTS")
	open := filepath.Join(dir, "open-bin") // root's, but anyone may write it
	tool(open, "OPEN")
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"PATH":            users + ":" + open + ":" + roots + ":relative",
		"LD_PRELOAD":      "/tmp/evil.so",
		"LD_LIBRARY_PATH": "/tmp",
		"SYSTEMD_PAGER":   "sh -c evil",
		"HOME":            "/root",
	}
	ctx := context.Background()
	out, err := command(ctx, []string{"systemctl", "show"}, true, func(k string) string { return env[k] }).Output()
	if err != nil {
		t.Fatalf("root's systemctl did not run: %v", err)
	}
	got := string(out)
	if !strings.HasPrefix(got, "ROOTS\n") {
		t.Fatalf("as root, ran %q, want root's own systemctl", strings.SplitN(got, "\n", 2)[0])
	}
	for _, bad := range []string{"LD_PRELOAD", "LD_LIBRARY_PATH", "SYSTEMD_PAGER", users, open, "relative"} {
		if strings.Contains(got, bad) {
			t.Errorf("root's systemctl was given %q:\n%s", bad, got)
		}
	}
	if !strings.Contains(got, "\nPATH="+roots+"\n") || !strings.Contains(got, "\nHOME=/root\n") {
		t.Errorf("want PATH of root's directories alone, and HOME:\n%s", got)
	}

	// Named by path, a program of the user's is refused, not run.
	if err := command(ctx, []string{filepath.Join(users, "systemctl")}, true, func(k string) string { return env[k] }).Run(); err == nil {
		t.Error("as root, ran a program the user can change, named by its path")
	}
	// With no root directory on PATH, nothing runs, and the error says why.
	env["PATH"] = users
	err = command(ctx, []string{"systemctl"}, true, func(k string) string { return env[k] }).Run()
	if err == nil || !strings.Contains(err.Error(), "only root can change") {
		t.Errorf("with only the user's directory on PATH: %v", err)
	}
	// Not root: the caller's own environment and PATH, as their shell.
	c := command(ctx, []string{"systemctl"}, false, func(k string) string { return env[k] })
	if c.Env != nil {
		t.Errorf("not root, the environment was replaced: %q", c.Env)
	}
}

// TestRootOnly walks the directories above a path.
func TestRootOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make files of root's and of another user")
	}
	dir := testdir.New(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mk := func(rel string, mode os.FileMode, uid int) string {
		return mkOwned(t, dir, rel, mode, uid, uid)
	}
	sticky := mk("sticky", 0o777|os.ModeSticky, 0)
	for _, c := range []struct {
		path string
		want bool
	}{
		{"/usr/bin", true},
		{mk("plain", 0o755, 0), true},
		{mk("sticky/roots", 0o755, 0), true},                        // /tmp's rule
		{mk("theirs", 0o755, 65534), false},                         // another user's
		{mk("theirs-parent/inside", 0o755, 0), true},                // made root's below...
		{mkOwned(t, dir, "group-writable", 0o775, 0, 65534), false}, // another group could swap it
		{mk("open/inside", 0o755, 0), true},                         // ...until the parent is opened below
		{sticky, false},                                             // open to all itself
		{filepath.Join(dir, "missing"), false},
	} {
		if got := rootOnly(c.path); got != c.want {
			t.Errorf("rootOnly(%s) = %v, want %v", c.path, got, c.want)
		}
	}
	// A root directory below another user's is theirs to replace.
	mk("theirs-parent", 0o755, 65534)
	if rootOnly(filepath.Join(dir, "theirs-parent", "inside")) {
		t.Error("a directory under another user's counted as root's alone")
	}
	// Below a directory anyone may write (not sticky), anything may be renamed.
	mk("open", 0o777, 0)
	if rootOnly(filepath.Join(dir, "open", "inside")) {
		t.Error("a directory under one open to all (not sticky) counted as root's alone")
	}
	// A program: root's and closed to others, or not at all.
	prog := func(name string, mode os.FileMode, uid int) string {
		p := filepath.Join(dir, "plain", name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		path string
		want bool
	}{
		{prog("roots", 0o755, 0), true},
		{prog("theirs", 0o755, 65534), false},
		{prog("writable", 0o777, 0), false},
		{"/usr/bin/env", true},
	} {
		if got := rootOnly(c.path); got != c.want {
			t.Errorf("rootOnly(%s) = %v, want %v", c.path, got, c.want)
		}
	}
	// A link is judged where it leads.
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(dir, "theirs"), link); err != nil {
		t.Fatal(err)
	}
	if rootOnly(link) {
		t.Error("a root-owned link to another user's directory counted as root's alone")
	}
}

// mkOwned makes dir/rel a directory of uid and gid with mode.
func mkOwned(t *testing.T, dir, rel string, mode os.FileMode, uid, gid int) string {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, uid, gid); err != nil {
		t.Fatal(err)
	}
	return p
}

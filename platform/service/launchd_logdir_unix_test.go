//go:build unix

package service

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"howett.net/plist"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/asroot"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// TestLaunchdDaemonLogsWhereItsUserCan: sudo install --system makes a
// LaunchDaemon that runs as the user (UserName). launchd opens its
// StandardErrorPath as that user, and the supervisor opens and rotates
// its --log-file as that user: /Library/Logs/hermes-supervisor, made by
// `mkdir -p` as root, refused both, so the supervisor exited at every
// start. The install's log directory is now the user's own, made for them,
// and the user can create both files in it.
func TestLaunchdDaemonLogsWhereItsUserCan(t *testing.T) {
	asroot.Require(t, "installing for another user needs root")
	const uid = 65534 // nobody
	home := testdir.New(t)
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(home, "Library", "Logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(home, "Library"), logs} {
		if err := os.Chown(d, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	installAs(t, home, uid)
	// Without ~/Library/Logs, it is made too, theirs as well.
	if err := os.RemoveAll(logs); err != nil {
		t.Fatal(err)
	}
	installAs(t, home, uid)
	if fi, err := os.Lstat(logs); err != nil || fi.Sys().(*syscall.Stat_t).Uid != uid {
		t.Errorf("%s: %v %v, want a directory of uid %d", logs, fi, err, uid)
	}
}

// installAs plans the daemon's install for uid, whose home is home, applies
// the plan's log directory step and checks what the user can do there.
func installAs(t *testing.T, home string, uid int) {
	t.Helper()
	logs := filepath.Join(home, "Library", "Logs")
	c := ann(true)
	c.User, c.UID, c.UserHome = "nobody", uid, home
	l := Launchd{Glob: func(string) ([]string, error) { return nil, nil }, Output: (&fakeLaunchctl{}).output}
	p, err := l.Install(c, false)
	if err != nil {
		t.Fatal(err)
	}
	// The log paths the plist gives launchd and the supervisor.
	data, err := l.Plist(c)
	if err != nil {
		t.Fatal(err)
	}
	var def struct {
		ProgramArguments  []string
		StandardErrorPath string
		UserName          string
	}
	if _, err := plist.Unmarshal(data, &def); err != nil {
		t.Fatal(err)
	}
	logFile := ""
	for i, a := range def.ProgramArguments {
		if a == "--log-file" && i+1 < len(def.ProgramArguments) {
			logFile = def.ProgramArguments[i+1]
		}
	}
	want := filepath.Join(logs, "hermes-supervisor")
	if def.UserName != "nobody" || filepath.Dir(logFile) != want || filepath.Dir(def.StandardErrorPath) != want {
		t.Fatalf("UserName %q, --log-file %q, StandardErrorPath %q: want both in %s", def.UserName, logFile, def.StandardErrorPath, want)
	}
	// The plan's own step makes that directory, as root, for the user.
	made := false
	for _, s := range p.Steps {
		if s.Run != nil && s.Run[0] == "mkdir" {
			t.Errorf("the plan runs %q as root: the directory would be root's", s.Run)
		}
		if s.Do != nil && strings.Contains(s.What, want) {
			if err := s.Do(context.Background()); err != nil {
				t.Fatalf("%s: %v", s.What, err)
			}
			made = true
		}
	}
	if !made {
		t.Fatalf("no step of the plan makes %s: %+v", want, p.Steps)
	}
	// What launchd and the supervisor do as the user: create and append
	// to the files, and rotate the log by a rename in the directory.
	script := `: >> "$1" && : >> "$2" && mv "$2" "$2.1"`
	cmd := exec.Command("/bin/sh", "-c", script, "sh", def.StandardErrorPath, logFile)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as uid %d: %v: %s", uid, err, out)
	}
}

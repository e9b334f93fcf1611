package passwd

import (
	"context"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// TestGetentIsLibcs asks the real getent, as the fallback does, for the
// accounts the real os/user can see, by name and by uid: the same account
// comes back, and an unknown one is unknown.
func TestGetentIsLibcs(t *testing.T) {
	path := ""
	for _, p := range getentPaths {
		if _, err := os.Stat(p); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Fatalf("no getent at %v: install libc-bin", getentPaths)
	}
	ctx := context.Background()
	nf := errors.New("not found")
	for _, name := range []string{"root", "nobody"} {
		want, err := user.Lookup(name)
		if err != nil {
			t.Fatalf("os/user: %v", err)
		}
		got, err := getent(ctx, path, name, false, nf)
		if err != nil || *got != *want {
			t.Errorf("getent %s = %+v, %v; os/user says %+v", name, got, err, want)
		}
		got, err = getent(ctx, path, want.Uid, true, nf)
		if err != nil || *got != *want {
			t.Errorf("getent uid %s = %+v, %v; os/user says %+v", want.Uid, got, err, want)
		}
	}
	if _, err := getent(ctx, path, "no-such-user-hermes-supervisor", false, nf); err != nf {
		t.Errorf("getent of an unknown user: %v, want the not-found error passed in", err)
	}
}

// TestGetentAnswers runs stand-ins for getent: a directory that knows a
// user /etc/passwd does not (the case the fallback is for), and databases
// that answer wrongly. Only the first gives an account.
func TestGetentAnswers(t *testing.T) {
	dir := testdir.New(t)
	stub := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	directory := stub("directory", `[ "$1 $2" = "passwd carol@corp" ] && { echo 'carol@corp:*:700001:700001:Carol,Room 1:/home/carol:/bin/zsh'; exit 0; }
[ "$1 $2" = "passwd 700001" ] && { echo 'carol@corp:*:700001:700001:Carol:/home/carol:/bin/zsh'; exit 0; }
exit 2`)
	ctx := context.Background()
	nf := errors.New("not found")
	want := user.User{Username: "carol@corp", Uid: "700001", Gid: "700001", Name: "Carol", HomeDir: "/home/carol"}
	if u, err := getent(ctx, directory, "carol@corp", false, nf); err != nil || *u != want {
		t.Errorf("by name: %+v, %v; want %+v", u, err, want)
	}
	if u, err := getent(ctx, directory, "700001", true, nf); err != nil || *u != want {
		t.Errorf("by uid: %+v, %v; want %+v", u, err, want)
	}
	if _, err := getent(ctx, directory, "dave", false, nf); err != nf {
		t.Errorf("an account the directory lacks: %v, want the not-found error", err)
	}
	for name, body := range map[string]string{
		"wrong-uid": `echo 'root:x:0:0::/root:/bin/sh'`,
		"garbage":   `echo 'not a passwd line'`,
		"two-lines": `printf 'a:x:1:1::/a:/bin/sh\nb:x:2:2::/b:/bin/sh\n'`,
		"flood":     `yes 'carol:x:700001:700001::/home/carol:/bin/sh'`,
		"broken":    `echo 'carol:x:700001:700001::/home/carol:/bin/sh'; exit 1`,
	} {
		if u, err := getent(ctx, stub(name, body), "700001", true, nf); err == nil || err == nf {
			t.Errorf("%s: %+v, %v; want an error of its own", name, u, err)
		} else if !strings.Contains(err.Error(), "700001") {
			t.Errorf("%s: %v does not name the key asked", name, err)
		}
	}
}

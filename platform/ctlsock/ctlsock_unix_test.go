//go:build unix

package ctlsock

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The test binary doubles as the other users' processes the endpoint tests
// need (see asUser).
func TestMain(m *testing.M) {
	switch os.Getenv("PLATFORM_HELPER") {
	case "squat": // bind the address as whoever we run as, and answer lies
		ln, err := net.Listen("unix", os.Getenv("PLATFORM_ADDR"))
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("bound\n")
		for {
			c, err := ln.Accept()
			if err != nil {
				os.Exit(0)
			}
			_, _ = c.Write([]byte(`{"ok":true,"status":{"state":"running"}}` + "\n"))
			c.Close()
		}
	case "dial": // dial the address as whoever we run as
		c, err := Dial(context.Background(), os.Getenv("PLATFORM_ADDR"))
		switch {
		case errors.Is(err, ErrForeignPeer):
			os.Exit(5)
		case err != nil:
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(3)
		}
		c.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func shortTempDir(t *testing.T) string {
	d, err := os.MkdirTemp("", "pt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func checkPrivate(t *testing.T, addr string) {
	t.Helper()
	fi, err := os.Stat(addr)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v %v, want 0600", fi.Mode(), err)
	}
}

// leaveStaleEndpoint leaves a socket file nobody listens on, as a killed
// supervisor does.
func leaveStaleEndpoint(t *testing.T, addr string) {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if _, err := os.Stat(addr); err != nil {
		t.Fatalf("no stale socket: %v", err)
	}
}

func TestControlAddressShortensLongHomes(t *testing.T) {
	long := "/" + strings.Repeat("h", 120)
	a, b := Address(long), Address(long)
	if a != b || len(a) >= 104 {
		t.Fatalf("long home address %q", a)
	}
	if Address(long+"x") == a {
		t.Fatal("two homes share an address")
	}
	if got := Address("/h"); got != "/h/hermes-supervisor.sock" {
		t.Fatalf("short home address %q", got)
	}
	if got := Addresses("/h"); len(got) != 1 || got[0] != "/h/hermes-supervisor.sock" {
		t.Fatalf("a short home has one address, got %q", got)
	}
}

// TestControlAddressIgnoresTheEnvironment: the address was taken from the
// caller's $XDG_RUNTIME_DIR, so a shell from su, ssh or cron looked
// elsewhere than the supervisor its service manager started, and said it
// was not running. Now the address is the same whatever the environment
// says, and the addresses a client tries include the old ones.
func TestControlAddressIgnoresTheEnvironment(t *testing.T) {
	long := "/" + strings.Repeat("h", 120)
	var got []string
	for _, env := range [][2]string{{"", ""}, {"/run/user/4242", "/var/tmp"}, {t.TempDir(), t.TempDir()}, {"relative", "/nonexistent"}} {
		t.Setenv("XDG_RUNTIME_DIR", env[0])
		t.Setenv("TMPDIR", env[1])
		got = append(got, Address(long))
		all := Addresses(long)
		if all[0] != got[len(got)-1] {
			t.Fatalf("Addresses %q does not start with Address", all)
		}
		if x := env[0]; filepath.IsAbs(x) && len(x) < 40 {
			if want := filepath.Join(x, filepath.Base(all[0])); !slices.Contains(all, want) {
				t.Errorf("the address older versions used, %s, is not tried: %q", want, all)
			}
		}
	}
	for _, a := range got[1:] {
		if a != got[0] {
			t.Fatalf("the address follows the environment: %q", got)
		}
	}
	uid := strconv.Itoa(os.Geteuid())
	if d := filepath.Dir(got[0]); d != "/run/user/"+uid && d != "/tmp/hermes-supervisor-"+uid {
		t.Fatalf("long home address %s is neither in /run/user/%s nor /tmp/hermes-supervisor-%s", got[0], uid, uid)
	}
}

// TestControlAddressesIn: the user's runtime directory comes first only
// while it is a private directory of ours; the /tmp fallback is always
// tried, and no address is too long for a socket or listed twice.
func TestControlAddressesIn(t *testing.T) {
	long := "/" + strings.Repeat("h", 120)
	name := "hermes-supervisor-" + homeHash(long) + ".sock"
	base := shortTempDir(t)
	own := filepath.Join(base, "own")
	open := filepath.Join(base, "open")
	link := filepath.Join(base, "link")
	for _, d := range []string{own, open} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(own, link); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(base, "tmp")
	tooLong := "/" + strings.Repeat("x", maxSocketPath)
	for _, tt := range []struct {
		run    string
		legacy []string
		want   []string
	}{
		{own, nil, []string{own, tmp}},
		{open, nil, []string{tmp, open}},
		{link, nil, []string{tmp, link}},
		{filepath.Join(base, "missing"), nil, []string{tmp, filepath.Join(base, "missing")}},
		{own, []string{own, tooLong, base}, []string{own, tmp, base}},
	} {
		got := controlAddressesIn(long, tt.run, tmp, tt.legacy)
		var want []string
		for _, d := range tt.want {
			want = append(want, filepath.Join(d, name))
		}
		if !slices.Equal(got, want) {
			t.Errorf("run dir %s, legacy %q:\n got %q\nwant %q", tt.run, tt.legacy, got, want)
		}
	}
}

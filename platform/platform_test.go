package platform

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testdir"
)

func TestDefaultPaths(t *testing.T) {
	env := func(kv map[string]string) func(string) string {
		return func(k string) string { return kv[k] }
	}
	home := filepath.FromSlash("/home/ann")
	tests := []struct {
		name          string
		env           map[string]string
		hermes, locks string
	}{
		{"explicit", map[string]string{"HERMES_HOME": "/srv/h", "HERMES_GATEWAY_LOCK_DIR": "/srv/l", "HOME": home, "USERPROFILE": home, "LOCALAPPDATA": home},
			"/srv/h", "/srv/l"},
		{"blank HERMES_HOME falls back", map[string]string{"HERMES_HOME": "  ", "HOME": home, "USERPROFILE": home, "XDG_STATE_HOME": "/xdg"},
			"", filepath.Join("/xdg", "hermes", "gateway-locks")},
		{"defaults", map[string]string{"HOME": home, "USERPROFILE": home},
			"", filepath.Join(home, ".local", "state", "hermes", "gateway-locks")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := DefaultHermesHome(env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if tt.hermes != "" && h != tt.hermes {
				t.Errorf("home %s, want %s", h, tt.hermes)
			}
			if tt.hermes == "" && !strings.HasSuffix(strings.ToLower(h), "hermes") {
				t.Errorf("default home %s", h)
			}
			l, err := DefaultLockDir(env(tt.env))
			if err != nil || l != tt.locks {
				t.Errorf("lock dir %s (%v), want %s", l, err, tt.locks)
			}
		})
	}
	h, _ := DefaultHermesHome(env(map[string]string{"HOME": home, "USERPROFILE": home, "LOCALAPPDATA": home, "HERMES_DATA_DIR_SUFFIX": "-dev"}))
	if !strings.HasSuffix(h, "hermes-dev") {
		t.Errorf("suffix not appended: %s", h)
	}
}

func TestControlEndpoint(t *testing.T) {
	home := shortTempDir(t)
	addr := ControlAddress(home)
	if _, err := DialControl(context.Background(), addr); !errors.Is(err, ErrNoEndpoint) {
		t.Fatalf("dial with no listener: %v", err)
	}
	ln, err := ListenControl(addr)
	if err != nil {
		t.Fatal(err)
	}
	checkPrivate(t, addr)
	if _, err := ListenControl(addr); !errors.Is(err, ErrEndpointInUse) {
		t.Fatalf("second listener: %v", err)
	}
	// The probe of the second ListenControl is also accepted here, so serve
	// every connection until the listener closes.
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hi\n"))
			c.Close()
		}
	}()
	c, err := DialControl(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 3)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "hi\n" {
		t.Fatalf("read %q %v", buf, err)
	}
	c.Close()
	ln.Close()
	leaveStaleEndpoint(t, addr)
	ln2, err := ListenControl(addr)
	if err != nil {
		t.Fatalf("listen over a stale endpoint: %v", err)
	}
	ln2.Close()
}

func TestReadRegularAndStamp(t *testing.T) {
	dir := testdir.New(t)
	p := filepath.Join(dir, "gateway.pid")
	if err := os.WriteFile(p, []byte("4242\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, st, err := ReadRegular(p, 100)
	if err != nil || string(b) != "4242\n" {
		t.Fatalf("read %q %v", b, err)
	}
	if b, _, err := ReadRegular(p, 3); err != nil || string(b) != "424" {
		t.Fatalf("bounded read %q %v", b, err)
	}
	again, err := Stamp(p)
	if err != nil || !again.Same(st) {
		t.Fatalf("unchanged file: stamp %v %v", again, err)
	}
	// Moved: the same file under another name keeps its stamp.
	moved := p + ".stale"
	if err := os.Rename(p, moved); err != nil {
		t.Fatal(err)
	}
	if m, err := Stamp(moved); err != nil || !m.Same(st) {
		t.Fatalf("renamed file: stamp %v %v", m, err)
	}
	// Replaced by a new file with the same content and time: another file.
	if err := os.WriteFile(p, []byte("4242\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chtimes(p, st.ModTime(), st.ModTime())
	if r, err := Stamp(p); err != nil || r.Same(st) {
		t.Fatalf("replaced file has the old stamp: %v", err)
	}
	if _, _, err := ReadRegular(dir, 100); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("directory: %v", err)
	}
	if _, _, err := ReadRegular(filepath.Join(dir, "missing"), 100); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}

package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// nobody runs the permission cases: root passes every permission check.
const nobody = 65534

// TestPowerLoss starts a supervisor over the files a power cut can leave,
// each case in a fresh home. The outcome is either a healthy gateway after
// a safe sweep (with nothing of value deleted: a corrupt file is moved
// aside, not removed) or one clear line naming the file and what to do.
func TestPowerLoss(t *testing.T) {
	dead := deadPID(t)
	old := time.Now().Add(-time.Minute) // past lockstore.Grace: no gateway is mid-write
	gatewayRecord := func(h *home, pid int, start *int64) lockstore.Record {
		return lockstore.NewRecord(procstate.Identity{PID: pid, StartTime: start, Argv: []string{"/usr/local/bin/hermes", "gateway", "run"}}, h.Home)
	}
	scoped := func(h *home) string { return h.ScopedLock(demogateway.Scope, "demo-token") }
	write := func(t *testing.T, path string, b []byte) {
		t.Helper()
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
	}
	writeRecord := func(t *testing.T, path string, r lockstore.Record) {
		t.Helper()
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		write(t, path, b)
	}
	// movedAside checks that the damaged bytes are kept next to the file.
	movedAside := func(path string, want []byte) func(*testing.T, *home) {
		return func(t *testing.T, h *home) {
			got, err := os.ReadFile(path + ".corrupt")
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s.corrupt = %q, %v; want the damaged bytes %q kept", path, got, err, want)
			}
		}
	}
	gone := func(paths func(*home) []string) func(*testing.T, *home) {
		return func(t *testing.T, h *home) {
			for _, p := range paths(h) {
				if _, err := os.Lstat(p); err == nil {
					t.Fatalf("%s is still there", p)
				}
			}
		}
	}
	truncated := []byte(`{"pid": 4242, "kind": "hermes-gateway", "argv": ["hermes", "gat`)
	garbage := []byte("\x00\x9f\xfe\x01PK\x03\x04\xff\xff\xff\xff\x00\x00\x00\x00garbage")
	future := int64(1) << 40 // clock ticks: far beyond this boot's uptime
	tests := []struct {
		name  string
		setup func(t *testing.T, h *home)
		// check runs after the gateway is healthy; nil when an error is expected.
		check func(t *testing.T, h *home)
		// errRE matches the single line of a refusal.
		errRE  string
		code   int // the exit wanted with errRE when not 1
		nobody bool
	}{
		{name: "gateway.pid truncated mid-write",
			setup: func(t *testing.T, h *home) { write(t, h.PIDFile(), truncated) },
			check: func(t *testing.T, h *home) { movedAside(h.PIDFile(), truncated)(t, h) }},
		{name: "gateway.pid zero-length",
			setup: func(t *testing.T, h *home) { write(t, h.PIDFile(), nil) },
			check: func(t *testing.T, h *home) { movedAside(h.PIDFile(), nil)(t, h) }},
		{name: "scoped lock of binary garbage",
			setup: func(t *testing.T, h *home) { write(t, scoped(h), garbage) },
			check: func(t *testing.T, h *home) { movedAside(scoped(h), garbage)(t, h) }},
		{name: "scoped lock truncated mid-write, gateway.pid of a dead pid",
			setup: func(t *testing.T, h *home) {
				write(t, scoped(h), truncated)
				writeRecord(t, h.PIDFile(), gatewayRecord(h, dead, nil))
			},
			check: func(t *testing.T, h *home) { movedAside(scoped(h), truncated)(t, h) }},
		{name: "a .stale rename left half done",
			setup: func(t *testing.T, h *home) {
				r := gatewayRecord(h, dead, nil)
				r.Scope = demogateway.Scope
				writeRecord(t, scoped(h)+".stale", r)
			},
			check: gone(func(h *home) []string { return []string{scoped(h) + ".stale"} })},
		{name: "a .stale rename and its .lock, both naming a dead pid",
			setup: func(t *testing.T, h *home) {
				r := gatewayRecord(h, dead, nil)
				r.Scope = demogateway.Scope
				writeRecord(t, scoped(h)+".stale", r)
				writeRecord(t, scoped(h), r)
			},
			check: gone(func(h *home) []string { return []string{scoped(h) + ".stale"} })},
		{name: "files from another boot: start time in the future, pid now taken by a live process",
			setup: func(t *testing.T, h *home) {
				r := gatewayRecord(h, os.Getpid(), &future)
				writeRecord(t, h.PIDFile(), r)
				r.Scope = demogateway.Scope
				writeRecord(t, scoped(h), r)
				write(t, h.StateFile(), []byte(fmt.Sprintf(`{"pid":%d,"start_time":%d,"kind":"hermes-gateway","gateway_state":"running"}`, os.Getpid(), future)))
			}},
		{name: "lock dir is a file",
			setup: func(t *testing.T, h *home) { mustReplaceWithFile(t, h.LockDir) }, code: 78,
			errRE: `^hermes-supervisor: \S+/locks is a file, not a directory: pass --lock-dir to a directory$`},
		{name: "home is a file",
			setup: func(t *testing.T, h *home) { mustReplaceWithFile(t, h.Home) }, code: 78,
			errRE: `^hermes-supervisor: \S+/home is a file, not a directory: pass --home to a directory$`},
		{name: "lock dir without permission", nobody: true,
			setup: func(t *testing.T, h *home) { chmod(t, h.LockDir, 0) },
			errRE: `^hermes-supervisor: open \S+/locks: permission denied: fix its permissions, run as its owner, or pass --lock-dir to another directory$`},
		{name: "lock dir read-only", nobody: true,
			setup: func(t *testing.T, h *home) { chmod(t, h.LockDir, 0o500) },
			errRE: `^hermes-supervisor: \S+/locks is not writable: .*permission denied: fix its permissions, run as its owner, or pass --lock-dir to another directory$`},
		{name: "home without permission", nobody: true,
			setup: func(t *testing.T, h *home) { chmod(t, h.Home, 0) },
			errRE: `^hermes-supervisor: open \S+/home: permission denied: fix its permissions, run as its owner, or pass --home to another directory$`},
	}
	tried, survived := 0, 0
	for round := 0; round < *rounds; round++ {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if tt.nobody && os.Geteuid() != 0 {
					t.Skip("needs root to run the supervisor as uid 65534")
				}
				tried++
				h := newHome(t, "")
				if tt.nobody {
					h.becomeNobody(t)
				}
				tt.setup(t, h)
				if tt.errRE != "" {
					out, code := h.exec("run", "--demo")
					out = strings.TrimSpace(out)
					// A path that names a file is refused for good (78: the
					// service manager must not restart it); the others may clear.
					want := 1
					if tt.code != 0 {
						want = tt.code
					}
					if code != want || !regexp.MustCompile(tt.errRE).MatchString(out) {
						t.Fatalf("exit %d, output:\n%s\nwant exit %d and one line matching %s", code, out, want, tt.errRE)
					}
					if gws, _ := gateways(h.Home); len(gws) != 0 {
						t.Fatalf("a gateway was started: %v", gws)
					}
					survived++
					return
				}
				sup := h.start(t, "run", "--demo")
				st := h.waitHealthy(t, sup, 0)
				if got := recordPID(h.PIDFile()); got != st.Child.PID {
					t.Fatalf("gateway.pid names %d, the gateway is %d", got, st.Child.PID)
				}
				if got := recordPID(scoped(h)); got != st.Child.PID {
					t.Fatalf("scoped lock names %d, the gateway is %d", got, st.Child.PID)
				}
				if tt.check != nil {
					tt.check(t, h)
				}
				_ = sup.cmd.Process.Signal(syscall.SIGTERM)
				if code := sup.exited(t, 30*time.Second); code != 0 {
					t.Fatalf("supervisor exited %d:\n%s", code, sup.out)
				}
				survived++
			})
		}
	}
	tally.add(count{"4. power loss: broken files and directories", tried, survived,
		"truncated, zero-length and garbage pid/lock files (moved aside to `.corrupt`, bytes kept), `.stale` leftovers, files from another boot naming a live pid: healthy after a safe sweep; lock dir or home that is a file: exit 78 (refused for good); unreadable or read-only: exit 1; each with one line naming the path and what to do"})
}

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func mustReplaceWithFile(t *testing.T, path string) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("not a directory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(path, 0o700) })
}

// becomeNobody hands h to uid 65534 and makes the next runs of the
// supervisor run as that user.
func (h *home) becomeNobody(t *testing.T) {
	t.Helper()
	for _, d := range []string{filepath.Dir(bin), filepath.Dir(h.dir), h.dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{h.Home, h.LockDir} {
		if err := os.Chown(d, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	h.cred = &syscall.Credential{Uid: nobody, Gid: nobody}
}

//go:build unix

package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/platform/ctlsock"
)

// askCase is a command line, a line it says, and how often it asks the
// supervisor at a hung endpoint.
type askCase struct {
	args []string
	out  string
	asks int
}

// TestServiceCommandsAskOnlyToStopAService: how long the running
// supervisor says its stop may take (service.Config.StopWait) is asked
// only by a command about to stop an installed service, and once. The
// endpoint here accepts and never answers, as a supervisor stopped by
// Ctrl-Z does: each ask costs its whole 2 s bound, so a start, an
// uninstall with nothing installed, or a stop that then asks again over
// the control endpoint must not make it.
func TestServiceCommandsAskOnlyToStopAService(t *testing.T) {
	env := askEnv(t)
	checkAsks(t, env, []askCase{
		{[]string{"start"}, "no hermes-supervisor service is installed", 0},
		{[]string{"uninstall"}, "nothing to uninstall", 0},
		{[]string{"stop", "--dry-run"}, "ask the supervisor at", 1},
	})
}

// askEnv is the environment of a fresh home, whose user home has no
// service installed (whatever the host's user installed).
func askEnv(t *testing.T) map[string]string {
	tmp := t.TempDir()
	env := map[string]string{
		"HOME":                    filepath.Join(tmp, "userhome"),
		"HERMES_HOME":             filepath.Join(tmp, "home"),
		"HERMES_GATEWAY_LOCK_DIR": filepath.Join(tmp, "locks"),
		"XDG_STATE_HOME":          filepath.Join(tmp, "state"),
	}
	// serviceConfig takes the user home from the process's own HOME.
	t.Setenv("HOME", env["HOME"])
	if err := os.Mkdir(env["HERMES_HOME"], 0o700); err != nil {
		t.Fatal(err)
	}
	return env
}

// checkAsks runs each case with a hung endpoint at the home of env, which
// counts the connections made to it.
func checkAsks(t *testing.T, env map[string]string, cases []askCase) {
	ln, err := ctlsock.Listen(ctlsock.Address(env["HERMES_HOME"]))
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c // held open, never answered
		}
	}()
	// drain counts the connections made so far, and closes them.
	drain := func() int {
		n := 0
		for {
			select {
			case c := <-conns:
				c.Close()
				n++
			default:
				return n
			}
		}
	}
	t.Cleanup(func() { ln.Close(); drain() })
	for _, tc := range cases {
		root := newRoot(func(k string) string { return env[k] })
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(tc.args)
		said := out.String
		if err := root.ExecuteContext(context.Background()); err != nil {
			said = func() string { return out.String() + err.Error() }
		}
		if !strings.Contains(said(), tc.out) {
			t.Errorf("%s: said %q, want %q in it", tc.args, said(), tc.out)
		}
		// An ask made waited out its bound on an accepted connection:
		// that connection is queued by now.
		if asked := drain(); asked != tc.asks {
			t.Errorf("%s asked the supervisor %d times, want %d", tc.args, asked, tc.asks)
		}
	}
}

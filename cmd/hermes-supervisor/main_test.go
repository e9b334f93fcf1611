package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/conformance"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/procstate"
	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

// The test binary is installed on PATH as hermes-supervisor, so the scripts
// drive the real CLI, and `run --demo` re-executes it as the demo gateway.
func TestMain(m *testing.M) {
	conformance.RunHelper()
	if isStubHermes() {
		os.Exit(stubHermes(os.Args[1:], os.Stdout, os.Stderr))
	}
	testscript.Main(exitUnderWine{m}, map[string]func(){
		"hermes-supervisor": func() { os.Exit(Main(os.Args[1:])) },
		"signal-sentinel":   signalSentinel,
	})
}

// exitUnderWine exits as soon as the tests ran when under Wine: testscript
// would then remove its temp dir, which Wine 8 cannot, and fail the run.
type exitUnderWine struct{ m *testing.M }

func (w exitUnderWine) Run() int {
	code := w.m.Run()
	if underWine {
		os.Exit(code)
	}
	return code
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		// Wine 8 cannot remove a directory tree; keep the work dirs there.
		TestWork:           underWine,
		RequireUniqueNames: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("HERMES_HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("HERMES_GATEWAY_LOCK_DIR", filepath.Join(env.WorkDir, "locks"))
			env.Setenv("XDG_STATE_HOME", filepath.Join(env.WorkDir, "state"))
			env.Values[notifyKey{}] = &notifyLog{}
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "root" {
				return os.Geteuid() == 0, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitstatus": cmdWaitStatus,
			"pidof":      cmdPidOf,
			"signal":     cmdSignal,
			"alive":      cmdAlive,
			"gone":       cmdGone,
			"statepid":   cmdStatePid,
			"unlocked":   cmdUnlocked,
			"age":        cmdAge,
			"waitfile":   cmdWaitFile,
			"waitline":   cmdWaitLine,
			"notify":     cmdNotify,
			"nobody":     cmdNobody,
			"writeq":     cmdWriteQ,
			"nocontrol":  cmdNoControl,
			"jsoneq":     cmdJSONEq,
			"stubhermes": cmdStubHermes,
		},
	})
}

// waitstatus STATE [FIELD=VALUE...] polls `hermes-supervisor status --json`
// until the state matches and every FIELD (restarts, child.ready,
// child.adopted) has the given value, and said=true waits for a STATUS=
// from the gateway; it fails after 30 s.
func cmdWaitStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: waitstatus STATE [restarts=N] [ready=BOOL]")
	}
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		_ = ts.Exec("hermes-supervisor", "status", "--json")
		last = ts.ReadFile("stdout")
		var st struct {
			State    string `json:"state"`
			Restarts int    `json:"restarts"`
			Child    *struct {
				Ready  bool   `json:"ready"`
				Status string `json:"status"`
			} `json:"child"`
		}
		if json.Unmarshal([]byte(last), &st) == nil && st.State == args[0] &&
			matches(st.Restarts, st.Child != nil && st.Child.Ready, st.Child != nil && st.Child.Status != "", args[1:]) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	ts.Fatalf("status did not reach %v; last:\n%s", args, last)
}

func matches(restarts int, ready, said bool, conds []string) bool {
	for _, c := range conds {
		k, v, _ := strings.Cut(c, "=")
		switch k {
		case "restarts":
			if strconv.Itoa(restarts) != v {
				return false
			}
		case "ready":
			if strconv.FormatBool(ready) != v {
				return false
			}
		case "said":
			if strconv.FormatBool(said) != v {
				return false
			}
		}
	}
	return true
}

// pidof VAR FILE sets VAR to the pid a record file names.
func cmdPidOf(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: pidof VAR FILE")
	}
	rec, err := lockstore.ReadRecord(ts.MkAbs(args[1]))
	ts.Check(err)
	ts.Setenv(args[0], strconv.Itoa(rec.PID))
}

// signal -SIG PID sends TERM, KILL, INT, HUP, USR1, STOP, TSTP or CONT to
// PID, the last three waiting until it is stopped or continued (only KILL on
// Windows).
func cmdSignal(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: signal -TERM|-KILL|-INT|-HUP|-USR1|-STOP|-TSTP|-CONT PID")
	}
	pid, err := strconv.Atoi(args[1])
	ts.Check(err)
	if args[0] == "-STOP" || args[0] == "-TSTP" {
		// Should the script fail while pid is stopped, testscript's
		// interrupt of its background commands would wait on it for good
		// (the CI run hung 20 minutes): resume it first, at the end.
		ts.Defer(func() { resume(pid) })
	}
	ts.Check(sendSignal(pid, args[0][1:]))
}

// alive PID succeeds while PID runs (a zombie counts as gone); with !, it
// waits up to 30 s for PID to go.
func cmdAlive(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: [!] alive PID")
	}
	pid, err := strconv.Atoi(args[0])
	ts.Check(err)
	p := procstate.NewProber(procstate.Options{StartTolerance: -1})
	live := func() bool {
		id, err := p.Inspect(context.Background(), pid)
		return err == nil && !p.Judge(context.Background(), id, nil).Verdict.Stale()
	}
	if !neg {
		if !live() {
			ts.Fatalf("pid %d is not running", pid)
		}
		return
	}
	// Polls with a deadline: the state it waits for changes in another process.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !live() {
			return
		}
	}
	ts.Fatalf("pid %d still runs", pid)
}

// gone PID succeeds only if PID has exited already (a zombie counts as
// gone), without waiting: for a command that promises to return only
// once a process is down.
func cmdGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: gone PID")
	}
	pid, err := strconv.Atoi(args[0])
	ts.Check(err)
	p := procstate.NewProber(procstate.Options{StartTolerance: -1})
	if id, err := p.Inspect(context.Background(), pid); err == nil && !p.Judge(context.Background(), id, nil).Verdict.Stale() {
		ts.Fatalf("pid %d still runs", pid)
	}
}

// statepid VAR FILE sets VAR to the supervisor's pid in the state file
// FILE.
func cmdStatePid(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: statepid VAR FILE")
	}
	st, err := supervisor.ReadStatusFile(ts.MkAbs(args[1]))
	ts.Check(err)
	ts.Setenv(args[0], strconv.Itoa(st.Supervisor.PID))
}

// unlocked FILE waits until nobody holds FILE's lock: a killed process
// shows as a zombie once its main thread is gone, but its other threads
// may still hold its files for a moment. It fails after 30 s.
func cmdUnlocked(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: unlocked FILE")
	}
	// Polls with a deadline: the state it waits for changes in another process.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_RDWR, 0)
		ts.Check(err)
		err = safefs.LockFile(f)
		if err == nil {
			_ = safefs.UnlockFile(f)
		}
		f.Close()
		if err == nil {
			return
		}
	}
	ts.Fatalf("%s is still locked", args[0])
}

// age FILE DURATION moves FILE's modification time into the past.
func cmdAge(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: age FILE DURATION")
	}
	d, err := time.ParseDuration(args[1])
	ts.Check(err)
	t := time.Now().Add(-d)
	ts.Check(os.Chtimes(ts.MkAbs(args[0]), t, t))
}

// waitfile FILE waits up to 30 s for FILE to exist and hold a record.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile FILE")
	}
	// Polls with a deadline: the state it waits for changes in another process.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := lockstore.ReadRecord(ts.MkAbs(args[0])); err == nil {
			return
		}
	}
	ts.Fatalf("%s did not appear", args[0])
}

// waitline FILE PATTERN waits up to 30 s for a line of FILE to match PATTERN.
func cmdWaitLine(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitline FILE PATTERN")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	// Polls with a deadline: the state it waits for changes in another process.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(ts.MkAbs(args[0])); err == nil && re.Match(b) {
			return
		}
	}
	ts.Fatalf("no line of %s matches %s", args[0], args[1])
}

// notify listen SOCKET stands in for systemd: it receives sd_notify
// datagrams on SOCKET until the script ends. notify wait PATTERN waits up
// to 30 s for a received message matching PATTERN; notify reset forgets
// what was received.
func cmdNotify(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: notify listen SOCKET | notify wait PATTERN | notify reset")
	}
	if args[0] == "reset" {
		ts.Value(notifyKey{}).(*notifyLog).reset()
		return
	}
	if len(args) != 2 {
		ts.Fatalf("usage: notify listen SOCKET | notify wait PATTERN | notify reset")
	}
	switch args[0] {
	case "listen":
		conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: ts.MkAbs(args[1]), Net: "unixgram"})
		ts.Check(err)
		msgs := ts.Value(notifyKey{}).(*notifyLog)
		ts.Defer(func() { conn.Close() })
		go func() {
			buf := make([]byte, 4096)
			for {
				n, _, err := conn.ReadFromUnix(buf)
				if err != nil {
					return
				}
				msgs.add(string(buf[:n]))
			}
		}()
	case "wait":
		msgs := ts.Value(notifyKey{}).(*notifyLog)
		re := regexp.MustCompile(args[1])
		// Polls with a deadline: the state it waits for changes in another process.
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if msgs.match(re) {
				return
			}
		}
		ts.Fatalf("no notification matching %s; got %q", args[1], msgs.all())
	default:
		ts.Fatalf("usage: notify listen SOCKET | notify wait PATTERN")
	}
}

type notifyKey struct{}

type notifyLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *notifyLog) add(m string) { l.mu.Lock(); l.msgs = append(l.msgs, m); l.mu.Unlock() }

func (l *notifyLog) reset() { l.mu.Lock(); l.msgs = nil; l.mu.Unlock() }

func (l *notifyLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs...)
}

func (l *notifyLog) match(re *regexp.Regexp) bool {
	for _, m := range l.all() {
		if re.MatchString(m) {
			return true
		}
	}
	return false
}

// writeq DIR NAME CONTENT writes CONTENT into DIR/NAME, both given as Go
// string literals ("a\x1b[2J\n.lock"): a script holds no raw control byte,
// and file names and contents of attacks do.
func cmdWriteQ(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: writeq DIR \"NAME\" \"CONTENT\"")
	}
	name, err := strconv.Unquote(args[1])
	ts.Check(err)
	content, err := strconv.Unquote(args[2])
	ts.Check(err)
	ts.Check(os.MkdirAll(ts.MkAbs(args[0]), 0o700))
	ts.Check(os.WriteFile(filepath.Join(ts.MkAbs(args[0]), name), []byte(content), 0o600))
}

// nocontrol FILE (stdout, stderr or a file) fails on any rune a terminal
// acts on or a reader cannot see: C0 and C1 controls but the newline that
// ends a line and the tab, DEL, separators, bidi and other format runes,
// invalid UTF-8.
func cmdNoControl(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: nocontrol FILE")
	}
	s := ts.ReadFile(args[0])
	for i, r := range s {
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\ufffd") {
			ts.Fatalf("%s: invalid UTF-8 byte %#x at %d: %q", args[0], s[i], i, s)
		}
		if r != '\n' && r != '\t' && !strconv.IsGraphic(r) {
			ts.Fatalf("%s: raw %U at byte %d: %q", args[0], r, i, s)
		}
	}
}

// jsoneq FILE PATH VALUE parses FILE as JSON and fails unless the string
// at PATH (dot-separated keys and indexes: child.status, 0.path) is VALUE,
// given as a Go string literal: JSON output carries the raw value.
func cmdJSONEq(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: jsoneq FILE PATH \"VALUE\"")
	}
	want, err := strconv.Unquote(args[2])
	ts.Check(err)
	var v any
	if err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &v); err != nil {
		ts.Fatalf("%s is not JSON: %v", args[0], err)
	}
	for _, k := range strings.Split(args[1], ".") {
		switch c := v.(type) {
		case map[string]any:
			v = c[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(c) {
				ts.Fatalf("%s: no element %s in %s", args[0], k, args[1])
			}
			v = c[i]
		default:
			ts.Fatalf("%s: %s is not in the JSON", args[0], args[1])
		}
	}
	if v != want {
		ts.Fatalf("%s: %s is %q, want %q", args[0], args[1], v, want)
	}
}

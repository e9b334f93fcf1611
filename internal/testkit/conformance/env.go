// Package conformance builds the file layouts of hermes-verdicts.md (and
// our own) with real processes, for the suites that check the supervisor
// judges each file as Hermes' own gateway/status.py does: lockstore's,
// through the Store, and cmd/hermes-supervisor's, through `sweep`.
//
// The processes are copies of the running test binary, named as the
// layout needs (hermes, python3, ...), so their command lines are real;
// a test binary that imports this package must call RunHelper first thing
// in its TestMain.
package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// roleEnv selects what a helper copy does.
const roleEnv = "CONFORMANCE_ROLE"

// deadline bounds every wait for a helper.
const deadline = 30 * time.Second

// RunHelper runs the helper role named in the environment and exits; it
// returns at once in the test binary itself.
//
// CONFORMANCE_COMM, when set, names the process first (see setComm).
// Roles: "sleep" blocks until stdin closes; "lock" holds CONFORMANCE_LOCK
// locked; "gateway" starts as Hermes does (gateway.lock, then gateway.pid,
// then the scoped lock CONFORMANCE_SCOPED) in CONFORMANCE_HOME. Each says
// "ready" on stdout once set up.
func RunHelper() {
	role := os.Getenv(roleEnv)
	if role == "" {
		return
	}
	var err error
	if name := os.Getenv(commEnv); name != "" {
		// Before anything is recorded: Hermes reads its start time then.
		if err := setComm(name); err != nil {
			fmt.Fprintln(os.Stderr, "conformance helper: name the process:", err)
			os.Exit(3)
		}
	}
	switch role {
	case "sleep":
	case "lock":
		err = holdLock(os.Getenv("CONFORMANCE_LOCK"))
	case "gateway":
		err = startGateway()
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance helper:", err)
		os.Exit(3)
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

func holdLock(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	return safefs.LockFile(f) // held until exit
}

// startGateway follows Hermes' start-up order and record format.
func startGateway() error {
	home := os.Getenv("CONFORMANCE_HOME")
	self, err := procstate.NewProber(procstate.Options{StartTolerance: -1}).Look(context.Background(), os.Getpid())
	if err != nil {
		return err
	}
	start := self.HermesStartTime()
	rec := map[string]any{"pid": os.Getpid(), "kind": "hermes-gateway", "argv": os.Args, "start_time": start, "hermes_home": home}
	body, _ := json.Marshal(rec)
	lock, err := os.OpenFile(filepath.Join(home, "gateway.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if err := safefs.LockFile(lock); err != nil {
		return err
	}
	if _, err := lock.Write(body); err != nil {
		return err
	}
	var pidBody []byte
	switch os.Getenv("CONFORMANCE_PIDFORM") {
	case "", "json":
		pidBody = body
	case "bare":
		pidBody = fmt.Appendf(nil, "%d\n", os.Getpid())
	case "bom":
		pidBody = append([]byte("\ufeff"), body...)
	case "string":
		rec["pid"] = fmt.Sprint(os.Getpid())
		pidBody, _ = json.Marshal(rec)
		rec["pid"] = os.Getpid()
	case "pystr": // a string only Python's int() reads: " +4_242 "
		rec["pid"] = " +" + pyDigits(os.Getpid()) + " "
		pidBody, _ = json.Marshal(rec)
		rec["pid"] = os.Getpid()
	case "pybare": // a bare pid only Python's int() reads
		pidBody = []byte("+" + pyDigits(os.Getpid()) + "\n")
	case "none":
	}
	if pidBody != nil {
		if err := writeExcl(filepath.Join(home, "gateway.pid"), pidBody); err != nil {
			return err
		}
	}
	if scoped := os.Getenv("CONFORMANCE_SCOPED"); scoped != "" {
		rec["scope"], rec["identity_hash"], rec["metadata"] = "telegram-bot-token", "0123456789abcdef", map[string]any{}
		b, _ := json.Marshal(rec)
		switch os.Getenv("CONFORMANCE_SCOPEDFORM") {
		case "bom":
			b = append([]byte("\ufeff"), b...)
		case "pystr":
			rec["pid"] = " +" + pyDigits(os.Getpid()) + " "
			b, _ = json.Marshal(rec)
		}
		if err := writeExcl(scoped, b); err != nil {
			return err
		}
	}
	return nil
}

// pyDigits writes n with an underscore after its first digit, which
// Python's int() reads and Go's strconv does not.
func pyDigits(n int) string {
	s := fmt.Sprint(n)
	if len(s) < 2 {
		return s
	}
	return s[:1] + "_" + s[1:]
}

func writeExcl(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Bin holds copies of the test binary under the names layouts need; one
// Bin serves a whole suite.
type Bin struct {
	dir string
	mu  sync.Mutex
}

// NewBin returns an empty Bin, removed when t ends.
func NewBin(t testing.TB) *Bin { return &Bin{dir: testdir.New(t)} }

// Path returns the path of a copy of the test binary named name (plus
// the OS's executable suffix).
func (b *Bin) Path(name string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := filepath.Join(b.dir, name+exeSuffix)
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	if os.Link(self, p) == nil {
		return p, nil
	}
	data, err := os.ReadFile(self)
	if err != nil {
		return "", err
	}
	return p, os.WriteFile(p, data, 0o755)
}

// Env is one layout under construction: a Hermes home, its lock dir, and
// another home, with the processes the layout needs.
type Env struct {
	T                    testing.TB
	Home, LockDir, Other string
	bin                  *Bin
	prober               *procstate.Prober
}

// NewEnv returns an empty layout in a fresh directory.
func NewEnv(t testing.TB, bin *Bin) *Env {
	dir := testdir.New(t)
	e := &Env{T: t, Home: filepath.Join(dir, "home"), LockDir: filepath.Join(dir, "locks"), Other: filepath.Join(dir, "other"),
		bin: bin, prober: procstate.NewProber(procstate.Options{StartTolerance: -1})}
	for _, d := range []string{e.Home, e.LockDir, e.Other} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// Proc is a helper process of a layout.
type Proc struct {
	PID   int
	Start *int64
	Argv  []string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// Start runs a copy of the test binary named name with args in role,
// with extra environment, and waits until it is ready.
func (e *Env) Start(role, name string, args []string, env ...string) *Proc {
	e.T.Helper()
	p := e.spawn(role, name, args, env...)
	if line, err := readLine(p.out); err != nil || line != "ready" {
		e.T.Fatalf("helper %s %v: %q %v", name, args, line, err)
	}
	return p
}

func (e *Env) spawn(role, name string, args []string, env ...string) *Proc {
	e.T.Helper()
	path, err := e.bin.Path(name)
	if err != nil {
		e.T.Fatal(err)
	}
	return e.launch(exec.Command(path, args...), role, env...)
}

// launch starts cmd, a copy of the test binary, in role with extra
// environment; it does not wait until the helper is ready.
func (e *Env) launch(cmd *exec.Cmd, role string, env ...string) *Proc {
	e.T.Helper()
	cmd.Env = append(append(os.Environ(), roleEnv+"="+role), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		e.T.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		e.T.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		e.T.Fatal(err)
	}
	p := &Proc{PID: cmd.Process.Pid, Argv: cmd.Args, cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	e.T.Cleanup(func() {
		resume(p.PID)
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	l, err := e.prober.Look(context.Background(), p.PID)
	if err != nil {
		e.T.Fatalf("look at helper %d: %v", p.PID, err)
	}
	p.Start = l.StartTime
	return p
}

// readLine reads one line, failing after the deadline.
func readLine(r *bufio.Reader) (string, error) {
	type res struct {
		s   string
		err error
	}
	c := make(chan res, 1)
	go func() { s, err := r.ReadString('\n'); c <- res{strings.TrimSpace(s), err} }()
	select {
	case r := <-c:
		return r.s, r.err
	case <-time.After(deadline):
		return "", errors.New("helper not ready in time")
	}
}

// Sleeper starts a process that only blocks, with argv name args.
func (e *Env) Sleeper(name string, args ...string) *Proc {
	e.T.Helper()
	return e.Start("sleep", name, args)
}

// Gateway starts a helper that claims home's files as Hermes does: the
// runtime lock, gateway.pid (in pidForm: json, bare, bom, string or
// none) and, unless scoped is "", that scoped lock.
func (e *Env) Gateway(home, scoped, pidForm string, args ...string) *Proc {
	e.T.Helper()
	return e.Start("gateway", "hermes", args, "CONFORMANCE_HOME="+home, "CONFORMANCE_SCOPED="+scoped, "CONFORMANCE_PIDFORM="+pidForm)
}

// HoldLock starts a process that holds path locked, as a gateway holds
// gateway.lock.
func (e *Env) HoldLock(path string) *Proc {
	e.T.Helper()
	return e.Start("lock", "holder", nil, "CONFORMANCE_LOCK="+path)
}

// Dead returns a process that has exited and been reaped, with argv name
// args.
func (e *Env) Dead(name string, args ...string) *Proc {
	e.T.Helper()
	p := e.Sleeper(name, args...)
	p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		e.T.Fatal(err)
	}
	return p
}

// Zombie returns a process that has exited and not been reaped.
func (e *Env) Zombie(name string, args ...string) *Proc {
	e.T.Helper()
	p := e.Sleeper(name, args...)
	p.stdin.Close()
	// Its stdout closes as it exits: the event. The kernel then makes it
	// a zombie within moments; wait for that, with a deadline.
	if _, err := io.Copy(io.Discard, p.out); err != nil {
		e.T.Fatal(err)
	}
	e.waitFor(p, "a zombie", func(l procstate.Live) bool { return l.Zombie })
	return p
}

// Stop stops p (SIGSTOP) and waits until the kernel says so.
func (e *Env) Stop(p *Proc) {
	e.T.Helper()
	if err := stop(p.PID); err != nil {
		e.T.Fatal(err)
	}
	e.waitFor(p, "stopped", func(l procstate.Live) bool { return l.Stopped })
}

func (e *Env) waitFor(p *Proc, what string, ok func(procstate.Live) bool) {
	e.T.Helper()
	end := time.Now().Add(deadline)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		if l, err := e.prober.Look(context.Background(), p.PID); err == nil && ok(l) {
			return
		}
		if time.Now().After(end) {
			e.T.Fatalf("pid %d did not become %s", p.PID, what)
		}
		<-tick.C
	}
}

// Record is the record a gateway p of home writes, as a JSON object the
// layout may change before writing it.
func (e *Env) Record(p *Proc, home string) map[string]any {
	return map[string]any{"pid": p.PID, "kind": "hermes-gateway", "argv": p.Argv, "start_time": p.Start, "hermes_home": home}
}

// GatewayArgv is the argv most records name.
var GatewayArgv = []string{"/usr/local/bin/hermes", "gateway", "run"}

// Write writes v (a []byte or string as is, anything else as JSON) to path.
func (e *Env) Write(path string, v any) string {
	e.T.Helper()
	var b []byte
	switch v := v.(type) {
	case []byte:
		b = v
	case string:
		b = []byte(v)
	default:
		b, _ = json.Marshal(v)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		e.T.Fatal(err)
	}
	return path
}

// Age sets path's modification time d back.
func (e *Env) Age(path string, d time.Duration) {
	t := time.Now().Add(-d)
	if err := os.Chtimes(path, t, t); err != nil {
		e.T.Fatal(err)
	}
}

// PIDFile is the layout's gateway.pid.
func (e *Env) PIDFile() string { return filepath.Join(e.Home, "gateway.pid") }

// RuntimeLock is the layout's gateway.lock.
func (e *Env) RuntimeLock() string { return filepath.Join(e.Home, "gateway.lock") }

// StateFile is the layout's gateway_state.json.
func (e *Env) StateFile() string { return filepath.Join(e.Home, "gateway_state.json") }

// Marker is the layout's planned-stop marker.
func (e *Env) Marker() string { return filepath.Join(e.Home, ".gateway-planned-stop.json") }

// Scoped is the layout's one scoped lock, a Telegram token's.
func (e *Env) Scoped() string {
	return filepath.Join(e.LockDir, "telegram-bot-token-0123456789abcdef.lock")
}

// FreeLock leaves a gateway.lock nobody holds, as a gateway that exited
// does.
func (e *Env) FreeLock() {
	e.T.Helper()
	e.Write(e.RuntimeLock(), "")
}

// InProfile makes the layout's home a named profile's,
// <root>/profiles/<name>, and Other that root's home: the layout of
// Hermes' profiles and of the multiplexer that serves them. Call it first
// in a row's Build.
func (e *Env) InProfile(name string) {
	e.T.Helper()
	root := filepath.Join(filepath.Dir(e.Home), "root")
	e.Home, e.Other = filepath.Join(root, "profiles", name), root
	if err := os.MkdirAll(e.Home, 0o700); err != nil {
		e.T.Fatal(err)
	}
}

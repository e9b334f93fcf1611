package chaos

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/sweepbin"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/syncbuf"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
	"github.com/hermes-agent/hermes-supervisor/internal/testkit/pidns"
	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/ctlsock"
	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

var (
	kills     = flag.Int("chaos.kills", 20, "SIGKILLs of the gateway child (scenario 1)")
	supKills  = flag.Int("chaos.supkills", 8, "SIGKILLs of the supervisor (scenario 2)")
	rounds    = flag.Int("chaos.rounds", 2, "rounds of the other scenarios")
	seed      = flag.Uint64("chaos.seed", 0, "random seed (0: from the clock, logged)")
	reportOut = flag.String("chaos.report", "", "write the counts as Markdown to this file")
)

// bin is the hermes-supervisor binary under test, built once by TestMain.
var bin string

// inPIDNS marks the re-executed test binary that runs a test inside a
// private PID namespace (see inPIDNSRun).
const inPIDNS = "HERMES_CHAOS_PIDNS"

// inPIDNSRun reports whether this is the run of test name inside a
// private PID namespace, where it goes on. Otherwise it re-runs only that
// test there, adds that run's tally to ours and reports false: the caller
// is done.
func inPIDNSRun(t *testing.T, name string) bool {
	t.Helper()
	if os.Getenv(inPIDNS) != "" {
		return true
	}
	out := t.TempDir() + "/tally.json"
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v", "-chaos.rounds="+strconv.Itoa(*rounds), "-chaos.seed="+strconv.FormatUint(*seed, 10))
	cmd.Env = append(os.Environ(), inPIDNS+"=1", "HERMES_CHAOS_BIN="+bin, tallyEnv+"="+out, "GORACE=atexit_sleep_ms=0")
	b, err := cmd.CombinedOutput()
	t.Logf("in a private PID namespace:\n%s", b)
	if err != nil {
		t.Fatalf("the namespaced run failed: %v", err)
	}
	data, err := os.ReadFile(out)
	if errors.Is(err, os.ErrNotExist) {
		// The namespaced run wrote no count: it skipped. Only root may make
		// the namespace, and CI runs as root, so there it is a failure.
		if os.Geteuid() != 0 {
			t.Skip("no private PID namespace without root (see the log above); CI runs as root")
		}
		t.Fatal("the namespaced run, as root, counted nothing: no private PID namespace (see the log above)")
	}
	var c count
	if err != nil || json.Unmarshal(data, &c) != nil {
		t.Fatalf("read the namespaced count: %v %q", err, data)
	}
	tally.add(c)
	return false
}

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv(inPIDNS) != "" {
		bin = os.Getenv("HERMES_CHAOS_BIN")
		pidns.Main(m) // exits
	}
	dir, err := os.MkdirTemp("", "hermes-chaos-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	bin = filepath.Join(dir, "hermes-supervisor")
	args := []string{"build", "-o", bin}
	if raceBuild {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "github.com/hermes-agent/hermes-supervisor/cmd/hermes-supervisor")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "chaos: build hermes-supervisor:", err)
		os.Exit(2)
	}
	code := m.Run()
	if *reportOut != "" && code == 0 {
		if err := tally.write(*reportOut); err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			code = 1
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// count is one scenario's result.
type count struct {
	Scenario string `json:"scenario"`
	Tried    int    `json:"tried"`
	Survived int    `json:"survived"`
	Note     string `json:"note"`
}

type counts struct {
	mu   sync.Mutex
	rows []count
}

// tally collects what every scenario tried and survived, for the report.
var tally = &counts{}

func (c *counts) add(r count) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rows = append(c.rows, r)
}

// conformanceHeading opens the section of the report that lockstore's
// conformance suite owns.
const conformanceHeading = "## Conformance with Hermes' own judging code"

// scenarioNumber is the number a scenario's name starts with ("7b. ..."
// is 7), or one past any for a name without one, which then comes last.
func scenarioNumber(name string) int {
	n, i := 0, 0
	for ; i < len(name) && name[i] >= '0' && name[i] <= '9'; i++ {
		n = n*10 + int(name[i]-'0')
	}
	if i == 0 {
		return math.MaxInt
	}
	return n
}

func (c *counts) write(path string) error {
	c.mu.Lock()
	rows := slices.Clone(c.rows)
	c.mu.Unlock()
	slices.SortFunc(rows, func(a, b count) int {
		// "10. ..." after "9. ...", not after "1. ...".
		if c := cmp.Compare(scenarioNumber(a.Scenario), scenarioNumber(b.Scenario)); c != 0 {
			return c
		}
		return strings.Compare(a.Scenario, b.Scenario)
	})
	var b bytes.Buffer
	b.WriteString(reportHead)
	cmd := []string{"go test -race ./internal/testsuite/chaos -args"}
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(a, "-chaos.") && !strings.HasPrefix(a, "-chaos.report") {
			cmd = append(cmd, a)
		}
	}
	fmt.Fprintf(&b, "Run on %s (%d cores) with `%s`.\n\n", time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), strings.Join(cmd, " "))
	b.WriteString("| scenario | tried | survived | what was checked |\n|---|---:|---:|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d | %d | %s |\n", r.Scenario, r.Tried, r.Survived, r.Note)
	}
	b.WriteString(reportTail)
	// The conformance section is lockstore's (TestConformanceTable keeps
	// its table): carry it over as it is.
	if old, err := os.ReadFile(path); err == nil {
		if i := bytes.Index(old, []byte("\n"+conformanceHeading)); i >= 0 {
			b.Write(old[i:])
		}
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// rng returns the scenario's random source; the seed is logged so a failure
// can be replayed with -chaos.seed.
func rng(t *testing.T) *rand.Rand {
	s := *seed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -chaos.seed=%d)", s, s)
	return rand.New(rand.NewPCG(s, s>>1|1))
}

// home is one Hermes home with its lock dir, in a temp dir.
type home struct {
	lockstore.Layout
	dir  string
	cred *syscall.Credential // run the supervisor as this user, if set
	// extraEnv is added last to every command's environment.
	extraEnv []string
}

func newHome(t *testing.T, locks string) *home {
	t.Helper()
	dir := t.TempDir()
	h := &home{Layout: lockstore.Layout{Home: filepath.Join(dir, "home"), LockDir: locks}, dir: dir}
	if h.LockDir == "" {
		h.LockDir = filepath.Join(dir, "locks")
	}
	for _, d := range []string{h.Home, h.LockDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { h.killAll(t) })
	return h
}

func (h *home) env() []string {
	// A race-enabled binary sleeps a second at exit unless told not to.
	env := append(os.Environ(), "HERMES_HOME="+h.Home, "HERMES_GATEWAY_LOCK_DIR="+h.LockDir, "XDG_STATE_HOME="+filepath.Join(h.dir, "state"), "GORACE=atexit_sleep_ms=0")
	return append(env, h.extraEnv...)
}

// proc is a process the test started, with its output kept for failures.
type proc struct {
	cmd  *exec.Cmd
	out  *syncbuf.Buffer
	done chan struct{}
	err  error
}

func (h *home) command(args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = h.env()
	if h.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: h.cred}
	}
	return cmd
}

// start runs bin with args against h, in the background.
func (h *home) start(t *testing.T, args ...string) *proc {
	t.Helper()
	cmd := h.command(args...)
	p := &proc{cmd: cmd, out: &syncbuf.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if strings.Contains(p.out.String(), "WARNING: DATA RACE") {
			t.Errorf("%v reported a data race:\n%s", cmd.Args, p.out)
		}
	})
	return p
}

// exec runs bin with args against h to completion.
// stopClean stops the supervisor with `stop`, which must say it stopped,
// and waits for it to exit 0.
func (h *home) stopClean(t *testing.T, sup *proc) {
	t.Helper()
	if out, code := h.exec("stop"); code != 0 || !strings.Contains(out, "stop: stopped") {
		t.Fatalf("stop: exit %d\n%s", code, out)
	}
	if code := sup.exited(t, 30*time.Second); code != 0 {
		t.Fatalf("supervisor exited %d:\n%s", code, sup.out)
	}
}

func (h *home) exec(args ...string) (string, int) {
	out, err := h.command(args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		return string(out) + err.Error(), -1
	}
	return string(out), 0
}

// exited waits up to d for p to exit and returns its exit code.
func (p *proc) exited(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	default:
		select {
		case <-p.done:
		case <-time.After(d):
			t.Fatalf("%v still runs after %v; output:\n%s", p.cmd.Args, d, p.out)
		}
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatalf("%v: %v", p.cmd.Args, p.err)
	}
	return 0
}

func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// status asks the supervisor of h over its control endpoint.
func (h *home) status(ctx context.Context) (*supervisor.Status, error) {
	resp, err := supervisor.Call(ctx, ctlsock.Address(h.Home), "status")
	if err != nil {
		return nil, err
	}
	if resp.Status == nil {
		return nil, fmt.Errorf("no status: %s", resp.Error)
	}
	return resp.Status, nil
}

// waitChild polls status until cond holds. A supervisor in `failed` fails
// the test: no scenario here may ever put it there.
func (h *home) waitChild(t *testing.T, sup *proc, what string, cond func(*supervisor.Status) bool) *supervisor.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var last *supervisor.Status
	var lastErr error
	for ctx.Err() == nil {
		st, err := h.status(ctx)
		if err == nil {
			last = st
			if st.State == supervisor.Failed {
				t.Fatalf("supervisor failed: %s\n%s", st.Reason, sup.out)
			}
			if cond(st) {
				return st
			}
		}
		lastErr = err
		select {
		case <-sup.done:
			t.Fatalf("supervisor exited while waiting for %s: %v\n%s", what, sup.err, sup.out)
		case <-time.After(time.Millisecond):
		}
	}
	t.Fatalf("no %s within 30 s; last status %+v, %v\n%s", what, last, lastErr, sup.out)
	return nil
}

// waitHealthy waits for a ready gateway other than not.
func (h *home) waitHealthy(t *testing.T, sup *proc, not int) *supervisor.Status {
	t.Helper()
	return h.waitChild(t, sup, "healthy gateway", func(st *supervisor.Status) bool {
		return st.State == supervisor.Running && st.Child != nil && st.Child.Ready && st.Child.PID != not
	})
}

// procInfo is one process seen in /proc.
type procInfo struct {
	pid, ppid int
	argv      []string
}

// processesOf lists the live (not zombie) processes whose environment names
// home as HERMES_HOME and whose argv[1] is one of subcommands.
func processesOf(home string, subcommands ...string) []procInfo {
	ents, _ := os.ReadDir("/proc")
	var out []procInfo
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || len(cmdline) == 0 {
			continue
		}
		argv := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
		if len(argv) < 2 || argv[0] != bin || !slices.Contains(subcommands, argv[1]) {
			continue
		}
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !slices.Contains(strings.Split(string(environ), "\x00"), "HERMES_HOME="+home) {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		i := bytes.LastIndexByte(stat, ')')
		if err != nil || i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		out = append(out, procInfo{pid, ppid, argv})
	}
	return out
}

// gateways splits the demo gateways of home into gateways and the
// grandchildren they spawned. A gateway never starts a gateway: a child of
// one is its helper, even between fork and exec, while it still shows the
// gateway's command line and environment.
func gateways(home string) (gws, helpers []procInfo) {
	ps := processesOf(home, demogateway.Command)
	isGateway := func(pid int) bool {
		return slices.ContainsFunc(ps, func(p procInfo) bool { return p.pid == pid && !slices.Contains(p.argv, "-sleep") })
	}
	for _, p := range ps {
		if slices.Contains(p.argv, "-sleep") || isGateway(p.ppid) {
			helpers = append(helpers, p)
		} else {
			gws = append(gws, p)
		}
	}
	return gws, helpers
}

// killAll leaves nothing of h running when a test ends, whatever happened.
func (h *home) killAll(t *testing.T) {
	for _, p := range processesOf(h.Home, "run", demogateway.Command) {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && len(stat) > i+2 && stat[i+2] != 'Z'
}

// recordPID reads the pid a record file names, or 0.
func recordPID(path string) int {
	r, err := lockstore.ReadRecord(path)
	if err != nil {
		return 0
	}
	return r.PID
}

// lockFiles lists the names in dir, sorted, but for the sweep's bin,
// which it requires to be empty.
func lockFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	bin := lockstore.Layout{LockDir: dir}.SweepBin()
	var names []string
	for _, e := range ents {
		if e.Name() == filepath.Base(bin) {
			// The sweep's own directory: to hold nothing but its
			// goroutines' bins, themselves empty; not listed.
			if left, err := sweepbin.Files(bin); err != nil || len(left) > 0 {
				t.Fatalf("the sweep's bin %s holds %v (%v); want nothing", bin, left, err)
			}
			continue
		}
		names = append(names, e.Name())
	}
	return names
}

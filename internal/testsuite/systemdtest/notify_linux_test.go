package systemdtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// forgeEnv makes the test binary the forger of TestNotifyForgedFromHost
// instead of running tests: it looks for a supervisor's sd_notify socket
// as any user of the network namespace can, and sends it the datagrams of
// forgedMessages. Its value lists the socket inodes it may attack, comma
// separated: the supervisor under test, never another on this machine.
const forgeEnv = "HERMES_SYSTEMDTEST_FORGE"

// forgedMessages are what a forger sends: a hang, a readiness, a status
// and a stop held open for an hour, each in a datagram of its own.
var forgedMessages = []string{"WATCHDOG=trigger", "READY=1", "STATUS=forged", "EXTEND_TIMEOUT_USEC=3600000000"}

func init() {
	if os.Getenv(forgeEnv) != "" {
		os.Exit(forge(os.Stdout, strings.Split(os.Getenv(forgeEnv), ",")))
	}
}

// forge finds the datagram sockets in /proc/net/unix named for a
// supervisor's notify socket, of the inodes in targets, and sends each
// the forged messages: an
// abstract name directly; a path as this mount namespace sees it, else
// through /proc/<pid>/root of each process until one is let through. It
// says on w what it found ("found <address>") and what the kernel took
// ("delivered <address> <message>"), and exits 0 unless it could not read
// the socket table.
func forge(w io.Writer, targets []string) int {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		fmt.Fprintln(w, "error:", err)
		return 2
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Num RefCount Protocol Flags Type St Inode Path
		fs := strings.Fields(sc.Text())
		if len(fs) == 8 && fs[4] == "0002" && strings.Contains(fs[7], "hermes-supervisor") && strings.Contains(fs[7], "notify") &&
			slices.Contains(targets, fs[6]) {
			names = append(names, fs[7])
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, name := range names {
		fmt.Fprintln(w, "found", name)
		tries := []string{name}
		if !strings.HasPrefix(name, "@") {
			for _, p := range procs {
				tries = append(tries, p+"/root"+name)
			}
		}
		var last error
		for _, addr := range tries {
			if last = sendAll(w, addr); last == nil {
				break
			}
		}
		if last != nil {
			fmt.Fprintf(w, "refused %s (and %d more ways to it): %v\n", name, len(tries)-1, last)
		}
	}
	return 0
}

// sendAll sends each forged message to addr, in a datagram of its own,
// and stops at the first the kernel refuses.
func sendAll(w io.Writer, addr string) error {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	to := &syscall.SockaddrUnix{Name: addr}
	if strings.HasPrefix(addr, "@") {
		to.Name = "\x00" + addr[1:]
	}
	for _, msg := range forgedMessages {
		if err := syscall.Sendto(fd, []byte(msg), 0, to); err != nil {
			return err
		}
		fmt.Fprintln(w, "delivered", addr, msg)
	}
	return nil
}

// forgeReport is what one run of the forger said.
type forgeReport struct {
	found     []string
	delivered int
	to        []string // the address of each datagram delivered
	out       string
}

// runForger runs the forger (a copy of this test binary that any user may
// run) against the sockets of inodes, with prefix before it (nsenter, say)
// and cred, if set, as its user.
func runForger(t *testing.T, forger string, inodes []string, cred *syscall.Credential, prefix ...string) forgeReport {
	t.Helper()
	argv := append(append([]string{}, prefix...), forger)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{forgeEnv + "=" + strings.Join(inodes, ","), "PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("forger %v: %v\n%s", argv, err, out)
	}
	r := forgeReport{out: string(out)}
	for _, l := range strings.Split(r.out, "\n") {
		if v, ok := strings.CutPrefix(l, "found "); ok {
			r.found = append(r.found, v)
		}
		if v, ok := strings.CutPrefix(l, "delivered "); ok {
			r.delivered++
			addr, _, _ := strings.Cut(v, " ")
			r.to = append(r.to, addr)
		}
	}
	return r
}

// copyForger copies this test binary where any user may run it: the
// build's directory is its builder's alone.
func copyForger(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "hermes-forger")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	forger := filepath.Join(dir, "forger")
	if err := os.WriteFile(forger, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return forger
}

// notifyStatus is what the test reads of `status --json`.
type notifyStatus struct {
	State    string `json:"state"`
	Restarts int    `json:"restarts"`
	Child    *struct {
		PID           int        `json:"pid"`
		Ready         bool       `json:"ready"`
		ReadyBy       string     `json:"ready_by"`
		Status        string     `json:"status"`
		NotifyIgnored int        `json:"notify_ignored"`
		KillAt        *time.Time `json:"kill_at"`
	} `json:"child"`
	LastExit json.RawMessage `json:"last_exit"`
}

// TestNotifyForgedFromHost is issue 23's forged sd_notify, tried under a
// real systemd: the supervisor runs as a system unit in a container with
// its own PID namespace and the host's network namespace, on the demo
// gateway speaking sd_notify. From the host, a user (nobody) and root,
// neither in the gateway's tree, look for its notify socket in
// /proc/net/unix as an attacker would, and send it WATCHDOG=trigger,
// READY=1, STATUS=forged and EXTEND_TIMEOUT_USEC; so does root entering
// the container's PID namespace alone, whose pid the supervisor then
// sees. The gateway must not be restarted, its status must stay its own,
// and every datagram the kernel delivered must be counted as ignored.
func TestNotifyForgedFromHost(t *testing.T) {
	requireHost(t)
	t.Parallel()
	bin := build(t)
	forger := copyForger(t)
	m := boot(t, bin, hostNetwork)
	const home = "/var/lib/hermes"
	sup := []string{"hermes-supervisor", "--home", home, "--lock-dir", home + "/locks"}
	// A keep-alive deadline makes the demo gateway speak sd_notify, as
	// Hermes does with gateway.systemd_watchdog_seconds set; it pings
	// every 30 s, which no load here delays past the deadline.
	m.must("sh", "-c", `mkdir -p `+home+` && echo '{"watchdog": "60s"}' >`+home+`/hermes-supervisor.json`)
	m.must(append(sup, "install", "--system", "--demo", "--wait", "60s")...)
	status := func() notifyStatus {
		t.Helper()
		out, err := m.exec(30*time.Second, append([]string{"sh", "-c", `"$@" 2>/dev/null`, "sh"}, append(sup, "status", "--json")...)...)
		var st notifyStatus
		if jerr := json.Unmarshal([]byte(out), &st); jerr != nil {
			t.Fatalf("status --json: %v, %v:\n%s", err, jerr, out)
		}
		return st
	}
	waitStatus := func(what string, cond func(notifyStatus) bool) notifyStatus {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			st := status()
			if cond(st) {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not reached after 60s: %+v %+v\n%s", what, st, st.Child,
					m.must("journalctl", "--no-pager", "-o", "cat", "-u", unit))
			}
			time.Sleep(50 * time.Millisecond) // the next look at the supervisor's state, not a guess at timing
		}
	}
	// The gateway's own READY=1 and STATUS= are what the forger mimics.
	// Readiness itself may be credited to gateway_state.json, which the
	// gateway writes just before its READY=1 (as Hermes does): a ready
	// poll can land between the two. Its STATUS= shows its datagram came.
	before := waitStatus("the gateway ready, its sd_notify STATUS= received", func(st notifyStatus) bool {
		return st.State == "running" && st.Child != nil && st.Child.Ready && st.Child.Status != ""
	})
	gw := before.Child.PID
	t.Logf("gateway %d ready by %s, status %q", gw, before.Child.ReadyBy, before.Child.Status)
	// The forger attacks the sockets of this supervisor only: other tests
	// on this machine run supervisors of their own.
	supPID := m.show("", unit, "MainPID")["MainPID"]
	var inodes []string
	for _, g := range regexp.MustCompile(`socket:\[(\d+)\]`).FindAllStringSubmatch(m.must("sh", "-c", `readlink /proc/"$1"/fd/*`, "sh", supPID), -1) {
		inodes = append(inodes, g[1])
	}

	// The supervisor holds two notify sockets: the gateway's, and the
	// next start's, made ahead. What reaches the gateway's is counted;
	// what reaches the spare is dropped when the next start takes it.
	gwSock := strings.TrimSpace(m.must("sh", "-c", `tr '\0' '\n' </proc/`+strconv.Itoa(gw)+`/environ | sed -n 's/^NOTIFY_SOCKET=//p'`))
	if gwSock == "" {
		t.Fatalf("gateway %d has no NOTIFY_SOCKET", gw)
	}
	delivered, toSpare := 0, 0
	for _, a := range []struct {
		who    string
		cred   *syscall.Credential
		prefix []string
		// reach says whether the kernel must let its datagrams through:
		// only root can traverse the supervisor's /proc/<pid>/root and
		// 0700 directory; what root sends must then be ignored.
		reach bool
	}{
		{"nobody on the host", &syscall.Credential{Uid: 65534, Gid: 65534}, nil, false},
		{"root on the host", nil, nil, true},
		{"root in the container's PID namespace", nil, []string{"nsenter", "-t", strconv.Itoa(m.init), "-p", "--"}, true},
	} {
		r := runForger(t, forger, inodes, a.cred, a.prefix...)
		t.Logf("%s:\n%s", a.who, r.out)
		if len(r.found) == 0 {
			t.Fatalf("%s found no notify socket in /proc/net/unix: the attack was not tried\n%s", a.who, r.out)
		}
		switch {
		case a.reach && r.delivered < len(forgedMessages):
			t.Errorf("%s delivered %d datagrams, want all %d: root can reach the socket, so its rejection is what is tested\n%s",
				a.who, r.delivered, len(forgedMessages), r.out)
		case !a.reach && r.delivered > 0:
			t.Errorf("%s delivered %d forged datagrams to the gateway's notify socket:\n%s", a.who, r.delivered, r.out)
		}
		for _, addr := range r.to {
			if strings.HasSuffix(addr, gwSock) {
				delivered++
			} else {
				toSpare++
			}
		}
	}

	// Every datagram delivered is counted once the supervisor read it.
	after := waitStatus(fmt.Sprintf("%d forged datagrams counted", delivered), func(st notifyStatus) bool {
		return st.Child == nil || st.Child.PID != gw || st.Child.NotifyIgnored >= delivered
	})
	switch {
	case after.State != "running" || after.Child == nil || after.Child.PID != gw || after.Restarts != before.Restarts:
		t.Errorf("after the forged datagrams: state %s, gateway %+v, restarts %d (was %d, gateway %d), last exit %s: want the same gateway running",
			after.State, after.Child, after.Restarts, before.Restarts, gw, after.LastExit)
	case after.Child.Status != before.Child.Status:
		t.Errorf("the gateway's status is %q after the forgery, was %q", after.Child.Status, before.Child.Status)
	case after.Child.NotifyIgnored != delivered:
		t.Errorf("notify_ignored = %d, want the %d datagrams delivered", after.Child.NotifyIgnored, delivered)
	case after.Child.KillAt != nil:
		t.Errorf("a stop deadline was set while running: %v", after.Child.KillAt)
	}
	if p := m.show("", unit, "ActiveState", "NRestarts"); !active(p) || p["NRestarts"] != "0" {
		t.Errorf("the unit after the forgery: %v", p)
	}
	// One line says why the first was ignored; the rest are only counted.
	journal := m.must("journalctl", "--no-pager", "-o", "cat", "-u", unit)
	if n := strings.Count(journal, "ignoring an sd_notify datagram from a sender outside"); n != 1 {
		t.Errorf("the journal says %d times that a datagram was ignored, want once per start:\n%s", n, journal)
	}
	for _, bad := range []string{"forged", "hung", "extended its stop"} {
		if strings.Contains(journal, bad) {
			t.Errorf("the journal shows a forged datagram believed (%q):\n%s", bad, journal)
		}
	}
	t.Logf("%d datagrams reached the gateway's socket %s, %d the spare", delivered, gwSock, toSpare)
	if toSpare == 0 {
		return
	}
	// The next start takes the spare socket, and drops what was queued.
	m.must(append(sup, "restart")...)
	next := waitStatus("the next gateway ready, its sd_notify STATUS= received", func(st notifyStatus) bool {
		return st.State == "running" && st.Child != nil && st.Child.PID != gw && st.Child.Ready && st.Child.Status != ""
	})
	if next.Child.Status == "forged" || next.Child.NotifyIgnored != 0 {
		t.Errorf("the next gateway after the forgery: %+v", next.Child)
	}
	journal = m.must("journalctl", "--no-pager", "-o", "cat", "-u", unit)
	if !strings.Contains(journal, "dropped datagrams sent to the next gateway's notify socket") {
		t.Errorf("%d datagrams reached the spare socket, and the next start did not say it dropped them:\n%s", toSpare, journal)
	}
	for _, bad := range []string{"forged", "hung"} {
		if strings.Contains(journal, bad) {
			t.Errorf("the journal shows a forged datagram believed after the restart (%q):\n%s", bad, journal)
		}
	}
}

package demogateway

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/sdnotify"
	"github.com/hermes-agent/hermes-supervisor/platform/signals"
)

// EnvHang, set to a duration, makes the demo gateway hang that long after
// it is running, as -hang-after does: `make run-hang` shows a hang caught.
const EnvHang = "HERMES_DEMO_HANG_AFTER"

// EnvStatusFile names a file whose bytes the demo gateway sends, as they
// are, as its STATUS= line: a gateway may say anything there, and tests
// show what `status` makes of it.
const EnvStatusFile = "HERMES_DEMO_STATUS_FILE"

// notifier speaks Hermes' sd_notify protocol (gateway/systemd_notify.py):
// only when both NOTIFY_SOCKET and WATCHDOG_USEC are set, READY=1 with a
// STATUS= once running, WATCHDOG=1 every WATCHDOG_USEC/2 while the main
// loop makes progress, STOPPING=1 on the way down.
type notifier struct {
	addr     string
	status   string
	interval time.Duration
	progress chan struct{} // the main loop's ticks
}

func newNotifier(getenv func(string) string) *notifier {
	addr := getenv("NOTIFY_SOCKET")
	usec, err := strconv.ParseInt(getenv("WATCHDOG_USEC"), 10, 64)
	if addr == "" || err != nil || usec <= 0 {
		return nil
	}
	status := "Demo gateway running"
	if f := getenv(EnvStatusFile); f != "" {
		if b, err := os.ReadFile(f); err == nil {
			status = string(b)
		}
	}
	return &notifier{addr: addr, status: status, interval: time.Duration(usec) * time.Microsecond, progress: make(chan struct{}, 1)}
}

func (n *notifier) send(g *gateway, msg string) {
	if n == nil {
		return
	}
	if err := sdnotify.Send(n.addr, msg); err != nil {
		g.say("sd_notify: %v", err)
	}
}

// ready announces readiness and starts the pinger, which pings only when
// the main loop ticked since its last ping, as Hermes pings only while its
// event loop makes timely progress.
func (n *notifier) ready(g *gateway) {
	if n == nil {
		return
	}
	n.send(g, "READY=1\nSTATUS="+n.status)
	go func() {
		t := time.NewTicker(n.interval / 2)
		defer t.Stop()
		for range t.C {
			select {
			case <-n.progress:
				n.send(g, "WATCHDOG=1")
			default:
			}
		}
	}()
}

// tick records that the main loop made progress.
func (n *notifier) tick() {
	if n == nil {
		return
	}
	select {
	case n.progress <- struct{}{}:
	default:
	}
}

// tickEvery is how often the main loop ticks for the pinger.
func (n *notifier) tickEvery() <-chan time.Time {
	if n == nil {
		return nil
	}
	return time.Tick(n.interval / 4)
}

// dumpStacks stands in for Hermes' faulthandler: on SIGUSR2, even while
// the main loop hangs, it appends a line to logs/gateway_faulthandler.log.
func (g *gateway) dumpStacks() {
	sig, ok := signals.Dump()
	if !ok {
		return
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, sig)
	go func() {
		for range c {
			dir := filepath.Join(g.o.home, "logs")
			_ = os.MkdirAll(dir, 0o700)
			f, err := os.OpenFile(filepath.Join(dir, "gateway_faulthandler.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				continue
			}
			fmt.Fprintf(f, "demo-gateway[%d] %s: stack dump requested; the main loop is blocked in hang()\n", g.self.PID, time.Now().Format(time.RFC3339))
			f.Close()
		}
	}()
}

// hang blocks the main loop for good: no more ticks, so no more pings,
// and no signal is handled but SIGKILL.
func (g *gateway) hang() {
	g.say("hanging now (as asked): no more keep-alives")
	for {
		time.Sleep(time.Hour)
	}
}

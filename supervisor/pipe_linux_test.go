package supervisor

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestOutputPipeEnds: our end of a gateway's output pipe is in the poller
// (a deadline can be set on it), and the gateway's end is blocking before
// exec ever sees it, so that exec has nothing to change at the fork.
func TestOutputPipeEnds(t *testing.T) {
	p, err := newOutputPipes()
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	for i := range p.r {
		if err := p.r[i].SetReadDeadline(time.Now().Add(time.Hour)); err != nil {
			t.Errorf("read end %d is not in the poller: %v", i, err)
		}
		fl, err := unix.FcntlInt(p.w[i].Fd(), unix.F_GETFL, 0)
		if err != nil {
			t.Fatal(err)
		}
		if fl&unix.O_NONBLOCK != 0 {
			t.Errorf("write end %d is non-blocking", i)
		}
		if err := p.w[i].SetWriteDeadline(time.Now()); err == nil {
			t.Errorf("write end %d is in the poller: exec would make it blocking at every start", i)
		}
	}
}

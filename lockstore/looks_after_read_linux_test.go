package lockstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLookTakenAfterTheRead: a sweep judges a record only on a look at its
// pid taken after the record was read. A look shared by the records of
// one pid and taken for the first of them is older than the second's
// read; a gateway that changed in between (here: stopped when the first
// was judged, then continued, and rewrote its second lock) would lose a
// lock it wrote while it ran, on what it was before it wrote it.
func TestLookTakenAfterTheRead(t *testing.T) {
	s, l := newStore(t)
	gw := startProc(t, "block", true)
	if err := unix.Kill(gw.PID, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Kill(gw.PID, unix.SIGCONT) })
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, gw.PID, &info, unix.WSTOPPED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	// While it is stopped, both its locks are stale by Hermes' rule.
	writeScoped(t, l, "telegram-bot-token", "first", gw)
	writeScoped(t, l, "discord-bot-token", "second", gw)

	var second string
	calls := 0
	s.beforeJudge = func(p string) {
		if calls++; calls != 2 {
			return
		}
		// The first lock has been read, and perhaps judged on a look at
		// the stopped gateway. It now runs again and rewrites its second
		// lock, as its own claim does.
		second = p
		if err := unix.Kill(gw.PID, unix.SIGCONT); err != nil {
			t.Error(err)
			return
		}
		if err := unix.Waitid(unix.P_PID, gw.PID, &info, unix.WCONTINUED|unix.WNOWAIT, nil); err != nil {
			t.Error(err)
			return
		}
		b, err := NewRecord(gw, l.Home).Encode()
		if err == nil {
			err = WriteFileAtomic(p, b, 0o644)
		}
		if err != nil {
			t.Error(err)
		}
	}
	es, err := s.Sweep(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if second == "" {
		t.Fatal("the second lock was never judged")
	}
	if _, err := os.Stat(second); err != nil {
		e := byPath(es)[second]
		t.Errorf("%s, written by a running gateway after the first lock was judged: %v (%s/%s: %s)",
			filepath.Base(second), err, e.Verdict, e.Action, e.Reason)
	}
}

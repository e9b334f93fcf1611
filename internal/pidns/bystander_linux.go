package pidns

import (
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Signalled is the exit code of a bystander that received any catchable
// signal: a test that sees it knows the supervisor signalled a process it
// must never touch.
const Signalled = 42

// Bystander is the body of an unrelated process that happens to get a
// recorded pid: it exits 0 when its stdin closes and Signalled on any
// catchable signal. It never returns.
func Bystander() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGQUIT)
	eof := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(eof) }()
	select {
	case <-sigs:
		os.Exit(Signalled)
	case <-eof:
		os.Exit(0)
	}
}

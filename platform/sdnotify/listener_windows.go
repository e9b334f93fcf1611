package sdnotify

import (
	"errors"
	"fmt"
)

// notifyDir is empty: there is no socket, so no directory of one.
type notifyDir struct{}

// makeDir fails on Windows: Go cannot receive AF_UNIX datagrams there,
// and Hermes sends none where Python lacks AF_UNIX. Readiness then comes
// from gateway_state.json.
func makeDir(string) (*Dir, error) {
	return nil, fmt.Errorf("notify socket: %w", errors.ErrUnsupported)
}

func (*Dir) listen() (*Listener, error) {
	return nil, fmt.Errorf("notify socket: %w", errors.ErrUnsupported)
}

func (l *Listener) receive([]byte) (Datagram, error) {
	return Datagram{}, errors.ErrUnsupported
}

func (*notifyDir) remove(string) {}

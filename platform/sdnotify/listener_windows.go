package sdnotify

import (
	"errors"
	"fmt"
	"net"
)

// notifyDir is empty: there is no socket, so no directory of one.
type notifyDir struct{}

// listen fails on Windows: Go cannot receive AF_UNIX datagrams there,
// and Hermes sends none where Python lacks AF_UNIX. Readiness then comes
// from gateway_state.json.
func listen(string) (*Listener, error) {
	return nil, fmt.Errorf("notify socket: %w", errors.ErrUnsupported)
}

func (*Listener) discard() (int, error) { return 0, errors.ErrUnsupported }

func (l *Listener) receive([]byte) (Datagram, error) {
	return Datagram{}, errors.ErrUnsupported
}

func (*notifyDir) remove(string) {}

// receiver is a listener's socket: a receive keeps nothing else between
// datagrams.
type receiver struct{ conn *net.UnixConn }

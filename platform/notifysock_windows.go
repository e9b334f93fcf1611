package platform

import (
	"errors"
	"fmt"
)

// ListenNotify fails on Windows: Go cannot receive AF_UNIX datagrams there,
// and Hermes sends none where Python lacks AF_UNIX. Readiness then comes
// from gateway_state.json.
func ListenNotify(dir string) (*NotifyListener, error) {
	return nil, fmt.Errorf("notify socket: %w", errors.ErrUnsupported)
}

func (l *NotifyListener) receive([]byte) (Datagram, error) {
	return Datagram{}, errors.ErrUnsupported
}

func (l *NotifyListener) closeNotifyDir() {}

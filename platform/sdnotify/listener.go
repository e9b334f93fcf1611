package sdnotify

// Listener receives the sd_notify datagrams of one gateway: the
// supervisor opens one per start and hands its Addr to the gateway as
// NOTIFY_SOCKET.
type Listener struct {
	addr      string
	notifyDir // the socket's private directory, where the OS has one
	receiver  // the socket, and what a receive keeps between datagrams
}

// Datagram is one message read from a Listener.
type Datagram struct {
	// N is how many bytes of the buffer hold the message.
	N int
	// PID is the sender's pid as the kernel reports it, 0 where the OS
	// does not say (macOS): there the socket's directory is the guard.
	PID int
	// Unseen reports a sender the kernel would not name: on Linux, one
	// outside our PID namespace (the kernel then reports pid 0), or a
	// datagram without credentials. Such a sender cannot be shown to be
	// in the gateway's tree, so nothing it says may be believed.
	Unseen bool
	// Truncated reports a message longer than the buffer.
	Truncated bool
}

// Addr returns the value for NOTIFY_SOCKET: the path of a socket in a
// directory only our user can enter.
func (l *Listener) Addr() string { return l.addr }

// Receive blocks for the next datagram, reading it into buf; it fails once
// the listener is closed. One goroutine at a time may call it.
func (l *Listener) Receive(buf []byte) (Datagram, error) { return l.receive(buf) }

// Close stops the listener and removes its socket and directory.
func (l *Listener) Close() error {
	err := l.conn.Close()
	l.notifyDir.remove(l.addr)
	return err
}

// Listen opens a datagram socket for one gateway's notifications in a fresh
// 0700 directory (dir is tried first), so that only our user can reach it.
// On Linux the socket also reports each sender's credentials (SO_PASSCRED),
// so that only the gateway's own tree is believed: a directory stops other
// users but not root, nor our own user in another PID namespace, whose pid
// the kernel reports as 0. On Windows, where Go cannot receive AF_UNIX
// datagrams and Hermes sends none, it returns errors.ErrUnsupported and
// readiness comes from gateway_state.json.
func Listen(dir string) (*Listener, error) { return listen(dir) }

// Discard drops every datagram queued on l so far, without blocking, and
// returns how many it dropped. A listener made ahead of its gateway's
// start (binding a socket is a file-system create, slow on a busy disk)
// is emptied this way just before the gateway is started: nothing sent
// before the gateway existed can be the gateway's, and from then on l is
// as good as one bound at that moment.
func (l *Listener) Discard() (int, error) { return l.discard() }

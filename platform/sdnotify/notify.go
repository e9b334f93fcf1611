package sdnotify

// Notify sends state (e.g. "READY=1") to the service manager that started
// us, when it asked for notifications through NOTIFY_SOCKET (systemd's
// Type=notify). It does nothing without one, and nothing on Windows, where
// the service control manager learns of our state through the service
// handler instead.
func Notify(state string) error { return notify(state) }

// Send sends state as one sd_notify datagram to addr ("@name" is an
// abstract socket); an empty addr sends nothing. On Linux it never
// blocks, as Hermes' own sender does not: a receiver whose queue is full
// makes it fail with EAGAIN. On Windows, which has no AF_UNIX datagrams,
// it returns errors.ErrUnsupported.
func Send(addr, state string) error { return send(addr, state) }

package ctlsock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/Microsoft/go-winio"
	"golang.org/x/sys/windows"
)

// Windows paths are case-insensitive: one home, one pipe.
func normalizeHome(h string) string { return strings.ToLower(h) }

// controlAddresses is the one named pipe of home: a pipe name has no
// length limit that would send it elsewhere.
func controlAddresses(home string) []string {
	return []string{pipePrefix + homeHash(home)}
}

// pipePrefix starts the name of every control pipe.
const pipePrefix = `\\.\pipe\hermes-supervisor-`

// listen listens on the named pipe addr, reachable only by SYSTEM,
// the current user and the users given as SIDs (the user who installed a
// service that runs as SYSTEM).
func listen(addr string, users ...string) (net.Listener, error) {
	sid, err := currentUserSID()
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	sddl := "D:P(A;;GA;;;SY)(A;;GA;;;" + sid + ")"
	for _, u := range users {
		// Parsed first, so a malformed value cannot widen the ACL.
		parsed, err := windows.StringToSid(u)
		if err != nil {
			return nil, fmt.Errorf("listen %s: control user %q is not a SID: %w", addr, u, err)
		}
		sddl += "(A;;GA;;;" + parsed.String() + ")"
	}
	// A live supervisor answers a dial. Checking first, as on unix, does
	// not rely on FILE_FLAG_FIRST_PIPE_INSTANCE, which Wine ignores.
	probe := 200 * time.Millisecond
	if c, err := winio.DialPipe(addr, &probe); err == nil {
		c.Close()
		return nil, fmt.Errorf("listen %s: %w", addr, ErrEndpointInUse)
	}
	cfg := &winio.PipeConfig{SecurityDescriptor: sddl}
	ln, err := winio.ListenPipe(addr, cfg)
	if err != nil {
		if errors.Is(err, windows.ERROR_ACCESS_DENIED) || errors.Is(err, windows.ERROR_PIPE_BUSY) {
			return nil, fmt.Errorf("listen %s: %w", addr, ErrEndpointInUse)
		}
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return ln, nil
}

// ourPipe reports whether addr is a name controlAddresses or listenFresh
// makes: the local prefix, then letters, digits and dashes only.
func ourPipe(addr string) bool {
	rest, ok := strings.CutPrefix(addr, pipePrefix)
	if !ok || rest == "" {
		return false
	}
	for _, r := range rest {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r == '-') {
			return false
		}
	}
	return true
}

// listenFresh listens on first with a random suffix: the pipe namespace
// is machine-wide, and any user may create a guessable name first; this
// one nobody can guess. Clients find it in the supervisor's state file.
func listenFresh(first string, users ...string) (net.Listener, string, error) {
	if first == "" {
		first = pipePrefix + "x"
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, "", fmt.Errorf("random pipe name: %w", err)
	}
	addr := first + "-" + hex.EncodeToString(b[:])
	ln, err := listen(addr, users...)
	if err != nil {
		return nil, "", err
	}
	return ln, addr, nil
}

func currentUserSID() (string, error) {
	tok := windows.GetCurrentProcessToken()
	u, err := tok.GetTokenUser()
	if err != nil {
		return "", fmt.Errorf("current user: %w", err)
	}
	return u.User.Sid.String(), nil
}

// dial connects to the named pipe addr, one of our own local pipe names.
func dial(ctx context.Context, addr string) (net.Conn, error) {
	if !ourPipe(addr) {
		// Never opened: a UNC name would authenticate to another host
		// with our credentials, and "..", resolved before the open,
		// reaches any pipe, file or device.
		return nil, fmt.Errorf("dial %q: not a local control pipe of this supervisor: %w", addr, ErrNoEndpoint)
	}
	timeout := 5 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	c, err := winio.DialPipe(addr, &timeout)
	switch {
	case err == nil:
		if err := checkPipeServer(c); err != nil {
			c.Close()
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
		return c, nil
	case errors.Is(err, windows.ERROR_FILE_NOT_FOUND), errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("dial %s: %w", addr, ErrNoEndpoint)
	case errors.Is(err, windows.ERROR_ACCESS_DENIED):
		return nil, fmt.Errorf("dial %s: %w", addr, os.ErrPermission)
	}
	return nil, fmt.Errorf("dial %s: %w", addr, err)
}

// localSystem is the SID of LocalSystem. The service runs as the user who
// installed it (the control pipe's server is then that user), never as
// LocalSystem; a pipe LocalSystem serves is still no forgery, since
// LocalSystem can do more than answer for the supervisor.
const localSystem = "S-1-5-18"

// checkPipeServer requires the process serving the pipe to run as the
// current user or as LocalSystem: a pipe name is guessable, and another
// user who created it first would otherwise answer for our supervisor.
func checkPipeServer(c net.Conn) error {
	f, ok := c.(interface{ Fd() uintptr })
	if !ok {
		return fmt.Errorf("pipe server: %T has no handle", c)
	}
	var pid uint32
	if err := windows.GetNamedPipeServerProcessId(windows.Handle(f.Fd()), &pid); err != nil {
		return fmt.Errorf("pipe server process: %w", err)
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		return fmt.Errorf("pipe server process %d: %w", pid, err)
	}
	defer windows.CloseHandle(h)
	var tok windows.Token
	if err := windows.OpenProcessToken(h, windows.TOKEN_QUERY, &tok); err != nil {
		return fmt.Errorf("pipe server process %d token: %w", pid, err)
	}
	defer tok.Close()
	u, err := tok.GetTokenUser()
	if err != nil {
		return fmt.Errorf("pipe server process %d user: %w", pid, err)
	}
	me, err := currentUserSID()
	if err != nil {
		return err
	}
	if sid := u.User.Sid.String(); sid != me && sid != localSystem {
		return fmt.Errorf("served by process %d of %s, not of %s: %w", pid, sid, me, ErrForeignPeer)
	}
	return nil
}

package platform

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/Microsoft/go-winio"
	"golang.org/x/sys/windows"
)

// hermesLockOffset is where Hermes' msvcrt.locking takes its 1-byte lock.
const hermesLockOffset = 1 << 20

// LockFile takes Hermes' exclusive, non-blocking gateway lock on f: one
// byte at offset 1,048,576, as msvcrt.locking does.
func LockFile(f *os.File) error {
	ol := windows.Overlapped{Offset: hermesLockOffset}
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION), errors.Is(err, windows.ERROR_IO_PENDING):
		return fmt.Errorf("lock %s: %w", f.Name(), ErrLocked)
	}
	return fmt.Errorf("lock %s: %w", f.Name(), err)
}

// UnlockFile releases the lock taken by LockFile.
func UnlockFile(f *os.File) error {
	ol := windows.Overlapped{Offset: hermesLockOffset}
	if err := windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol); err != nil {
		return fmt.Errorf("unlock %s: %w", f.Name(), err)
	}
	return nil
}

// IgnoredSignals returns nothing on Windows: a broken pipe is an error
// there, never a signal.
func IgnoredSignals() []os.Signal { return nil }

// ShutdownSignals returns the signals that ask a supervisor to stop.
//
// Go delivers the console's close, logoff and shutdown events as SIGTERM;
// unhandled, they end the process at once and its job object kills the
// gateway hard, so a foreground `run` whose console closes stops it with
// the planned-stop marker instead, in the few seconds Windows allows.
func ShutdownSignals() []os.Signal { return []os.Signal{os.Interrupt, syscall.SIGTERM} }

// RestartSignal reports that Windows has no restart signal.
func RestartSignal() (os.Signal, bool) { return nil, false }

// ReloadSignal reports that Windows has no reload signal.
func ReloadSignal() (os.Signal, bool) { return nil, false }

// TerminateSignal reports that Windows has no graceful stop signal: the
// gateway ignores console events when detached, so the planned-stop marker
// is the request.
func TerminateSignal() (os.Signal, bool) { return nil, false }

func defaultHomeParent(getenv func(string) string) (string, string, error) {
	if l := getenv(WindowsHomeBase); l != "" {
		return l, WindowsHomeName, nil
	}
	h, err := userHome(getenv)
	if err != nil {
		return "", "", err
	}
	return filepath.Join(h, "AppData", "Local"), WindowsHomeName, nil
}

func userHome(getenv func(string) string) (string, error) {
	if h := getenv("USERPROFILE"); h != "" {
		return h, nil
	}
	return os.UserHomeDir()
}

// Windows paths are case-insensitive: one home, one pipe.
func normalizeHome(h string) string { return strings.ToLower(h) }

// controlAddresses is the one named pipe of home: a pipe name has no
// length limit that would send it elsewhere.
func controlAddresses(home string) []string {
	return []string{`\\.\pipe\hermes-supervisor-` + homeHash(home)}
}

// ListenControl listens on the named pipe addr, reachable only by SYSTEM,
// the current user and the users given as SIDs (the user who installed a
// service that runs as SYSTEM).
func ListenControl(addr string, users ...string) (net.Listener, error) {
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

// CurrentUserSID returns the SID of the user this process runs as.
func CurrentUserSID() (string, error) { return currentUserSID() }

func currentUserSID() (string, error) {
	tok := windows.GetCurrentProcessToken()
	u, err := tok.GetTokenUser()
	if err != nil {
		return "", fmt.Errorf("current user: %w", err)
	}
	return u.User.Sid.String(), nil
}

// DialControl connects to the named pipe addr.
func DialControl(ctx context.Context, addr string) (net.Conn, error) {
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

// checkOwnDir accepts every directory on Windows: the service runs as the
// installing user (docs/security.md), and access there is the DACL's, not
// the owner's (an elevated administrator's files are owned by the
// Administrators group). Install compares the home's owner with the
// service's account instead, where a mismatch means the wrong user's home.
func checkOwnDir(string) error { return nil }

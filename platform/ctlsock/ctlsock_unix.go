//go:build unix

package ctlsock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"golang.org/x/sys/unix"
)

func normalizeHome(h string) string { return h }

// maxSocketPath stays under sun_path (108 on Linux, 104 on macOS).
const maxSocketPath = 100

// controlAddresses puts the socket in the home while that path fits in
// sun_path. A longer home gets hermes-supervisor-<hash>.sock in a directory
// that depends on the effective uid alone, never on the caller's
// environment: a shell from su, ssh or cron must find the supervisor its
// service manager started. That directory is /run/user/<uid> when it is
// the user's own, else /tmp/hermes-supervisor-<uid>, a 0700 directory
// listen makes (never a guessable name directly in a shared temp
// dir, where another user could bind it first). Both are listed, since
// /run/user/<uid> comes and goes with the user's sessions, and so are the
// places older versions took from $XDG_RUNTIME_DIR and $TMPDIR.
func controlAddresses(home string) []string {
	uid := strconv.Itoa(os.Geteuid())
	var legacy []string
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		legacy = append(legacy, x)
	}
	legacy = append(legacy, filepath.Join(os.TempDir(), privateDirPrefix+uid))
	return controlAddressesIn(home, filepath.Join("/run/user", uid), filepath.Join("/tmp", privateDirPrefix+uid), legacy)
}

// controlAddressesIn is controlAddresses with its directories given: run
// is the user's runtime directory, used first when it is private to us,
// tmp the fallback, legacy the directories older versions may have used.
func controlAddressesIn(home, run, tmp string, legacy []string) []string {
	p := filepath.Join(home, "hermes-supervisor.sock")
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if len(p) < maxSocketPath {
		return []string{p}
	}
	name := "hermes-supervisor-" + homeHash(home) + ".sock"
	dirs := []string{tmp, run}
	if checkPrivateDir(run, false) == nil {
		dirs = []string{run, tmp}
	}
	var addrs []string
	for _, d := range append(dirs, legacy...) {
		a := filepath.Join(d, name)
		if len(a) < maxSocketPath && !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// privateDirPrefix names the per-user fallback directory of sockets.
const privateDirPrefix = "hermes-supervisor-"

// checkPrivateDir requires dir to be a real directory (not a link) owned by
// the effective user and writable by nobody else. When create is set, a
// missing dir is made with mode 0700 first.
func checkPrivateDir(dir string, create bool) error {
	if create {
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("create %s: %w", dir, err)
		}
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return &os.PathError{Op: "lstat", Path: dir, Err: err}
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("%s is not a directory (a link?): %w", dir, safefs.ErrUnsafeDir)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s is owned by uid %d, not by uid %d: %w", dir, st.Uid, os.Geteuid(), safefs.ErrUnsafeDir)
	case st.Mode&0o002 != 0 || (st.Mode&0o020 != 0 && int(st.Gid) != os.Getegid()):
		// Group write is the user's own only under their primary group,
		// the rule OpenDir applies to the home.
		return fmt.Errorf("%s has mode %#o, writable by other users: %w", dir, st.Mode&0o7777, safefs.ErrUnsafeDir)
	}
	return nil
}

// trustedPeer reports whether uid may be at the other end: the same user,
// or root (a system supervisor, or an administrator asking). Root as a
// client trusts only root: it cannot tell a user's own supervisor from
// another user who squatted the address, so it reads the state file.
func trustedPeer(uid int) bool { return uid == os.Geteuid() || uid == 0 }

// listen listens on the unix socket addr, reachable only by the
// current user (mode 0600 from creation on) in a directory only that user
// can write; connections from processes of other users are closed
// unanswered. users, Windows SIDs, mean nothing here.
func listen(addr string, users ...string) (net.Listener, error) {
	dir := filepath.Dir(addr)
	private := strings.HasPrefix(filepath.Base(dir), privateDirPrefix)
	if err := checkPrivateDir(dir, private); err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	if c, err := net.Dial("unix", addr); err == nil {
		c.Close()
		return nil, fmt.Errorf("listen %s: %w", addr, ErrEndpointInUse)
	}
	// Nobody answers: whatever is there is a leftover of a dead supervisor.
	if err := os.Remove(addr); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket %s: %w", addr, err)
	}
	// The umask makes the socket 0600 as bind creates it. No chmod by path
	// follows: between bind and chmod the path could be swapped for a
	// link, and the chmod would land on the link's target.
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", addr)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return &peerListener{Listener: ln}, nil
}

// peerListener drops connections from untrusted users before anyone reads
// from them.
type peerListener struct{ net.Listener }

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if uid, err := peerUID(c); err == nil && trustedPeer(uid) {
			return c, nil
		}
		c.Close()
	}
}

// freshDirBase is where listenFresh makes its directories: short, so the
// socket path fits in sun_path, and never taken from the environment.
const freshDirBase = "/tmp"

// listenFresh listens in a new directory of a random name that it makes
// itself, mode 0700: another user can neither guess its name first nor
// enter it. Clients find it in the supervisor's state file. The directory
// goes with the listener.
func listenFresh(_ string, users ...string) (net.Listener, string, error) {
	dir, err := os.MkdirTemp(freshDirBase, privateDirPrefix+strconv.Itoa(os.Geteuid())+"-")
	if err != nil {
		return nil, "", fmt.Errorf("make a private socket directory: %w", err)
	}
	addr := filepath.Join(dir, "hermes-supervisor.sock")
	ln, err := listen(addr, users...)
	if err != nil {
		os.Remove(dir)
		return nil, "", err
	}
	return &dirListener{Listener: ln, dir: dir}, addr, nil
}

// dirListener removes its directory once the socket in it is gone.
type dirListener struct {
	net.Listener
	dir string
}

func (l *dirListener) Close() error {
	err := l.Listener.Close()
	// The socket is unlinked by Close; a directory that is not empty
	// (someone of ours put a file there) stays.
	_ = os.Remove(l.dir)
	return err
}

// checkEndpoint applies listen's rule to a client: addr must be a socket,
// not a link, owned by us or root, in a real directory owned by us or root
// that nobody else may write. Only then is its peer's uid worth anything:
// in a directory another user controls, a link by the socket's name
// would hand our request to any socket that user chose, root's included.
func checkEndpoint(addr string) error {
	dir := filepath.Dir(addr)
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return ErrNoEndpoint
		}
		return &os.PathError{Op: "lstat", Path: dir, Err: err}
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("%s is not a directory (a link?): %w", dir, ErrForeignPeer)
	case !trustedPeer(int(st.Uid)):
		return fmt.Errorf("%s is owned by uid %d, not by uid %d: %w", dir, st.Uid, os.Geteuid(), ErrForeignPeer)
	case st.Mode&0o002 != 0 || (st.Mode&0o020 != 0 && int(st.Gid) != os.Getegid()):
		return fmt.Errorf("%s has mode %#o, writable by other users: %w", dir, st.Mode&0o7777, ErrForeignPeer)
	}
	if err := unix.Lstat(addr, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return ErrNoEndpoint
		}
		return &os.PathError{Op: "lstat", Path: addr, Err: err}
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFSOCK:
		return fmt.Errorf("%s is not a socket (a link?): %w", addr, ErrForeignPeer)
	case !trustedPeer(int(st.Uid)):
		return fmt.Errorf("%s is owned by uid %d, not by uid %d: %w", addr, st.Uid, os.Geteuid(), ErrForeignPeer)
	}
	return nil
}

// dial connects to the unix socket addr, once checkEndpoint found it ours.
func dial(ctx context.Context, addr string) (net.Conn, error) {
	if err := checkEndpoint(addr); err != nil {
		if errors.Is(err, ErrForeignPeer) {
			return nil, fmt.Errorf("dial %s: %w; remove it if no supervisor of yours runs", addr, err)
		}
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", addr)
	switch {
	case err == nil:
		uid, perr := peerUID(c)
		if perr != nil {
			c.Close()
			return nil, fmt.Errorf("dial %s: %w", addr, perr)
		}
		if !trustedPeer(uid) {
			c.Close()
			return nil, fmt.Errorf("dial %s: served by uid %d, not uid %d: %w; remove it if no supervisor of yours runs", addr, uid, os.Geteuid(), ErrForeignPeer)
		}
		return c, nil
	case errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENOENT):
		return nil, fmt.Errorf("dial %s: %w", addr, ErrNoEndpoint)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return nil, fmt.Errorf("dial %s: %w", addr, os.ErrPermission)
	}
	return nil, fmt.Errorf("dial %s: %w", addr, err)
}

// currentUserSID: users are uids here, never SIDs.
func currentUserSID() (string, error) {
	return "", fmt.Errorf("current user SID: %w", errors.ErrUnsupported)
}

package ctlsock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
)

// ErrEndpointInUse reports a live listener already at the address.
var ErrEndpointInUse = errors.New("control endpoint in use by a running supervisor")

// ErrNoEndpoint reports that nothing listens at the address.
var ErrNoEndpoint = errors.New("no supervisor listening")

// ErrForeignPeer reports a control endpoint served (or called) by a process
// of another user: someone else bound the address first.
var ErrForeignPeer = errors.New("control endpoint belongs to another user")

// Address returns the address the supervisor of home listens at: a
// unix socket, or on Windows a named pipe, that depends only on home and
// the effective user, never on the caller's environment.
func Address(home string) string { return controlAddresses(home)[0] }

// Addresses returns every address a supervisor of home may listen
// at, Address(home) first, then the ones a different state of the
// system or an older version would have chosen: a client tries them all
// before it concludes that no supervisor runs.
func Addresses(home string) []string { return controlAddresses(home) }

func homeHash(home string) string {
	if abs, err := filepath.Abs(home); err == nil {
		home = abs
	}
	sum := sha256.Sum256([]byte(normalizeHome(home)))
	return hex.EncodeToString(sum[:])[:16]
}

// Listen listens at addr for the supervisor: a unix socket (mode 0600 from
// creation on, in a directory only the current user can write) whose
// connections from processes of other users, root aside, are closed
// unanswered; on Windows a named pipe reachable only by SYSTEM, the current
// user and the users given as SIDs (the user who installed a service that
// runs as SYSTEM), which mean nothing on Unix. A live supervisor at addr
// gives ErrEndpointInUse; a leftover socket of a dead one is replaced.
func Listen(addr string, users ...string) (net.Listener, error) { return listen(addr, users...) }

// ListenAny listens at the first of addrs it can make and, when none can
// be made, at a fresh address of its own that no other user can take
// first: the endpoint failing must never keep the supervisor from
// supervising, and a squatter of a guessable address must not either. It
// returns the listener, its address and, when earlier addresses were
// refused, why (one line); with no listener at all, an error saying why
// each address was refused.
func ListenAny(addrs []string, users ...string) (net.Listener, string, error) {
	var refused []string
	for _, a := range addrs {
		ln, err := listen(a, users...)
		if err == nil {
			return ln, a, refusals(refused)
		}
		refused = append(refused, err.Error())
	}
	first := ""
	if len(addrs) > 0 {
		first = addrs[0]
	}
	ln, a, err := listenFresh(first, users...)
	if err != nil {
		if len(refused) == 0 {
			return nil, "", err
		}
		return nil, "", fmt.Errorf("%s; %w", strings.Join(refused, "; "), err)
	}
	return ln, a, refusals(refused)
}

// refusals is the one-line account of addresses ListenAny passed over.
func refusals(r []string) error {
	if len(r) == 0 {
		return nil
	}
	return errors.New(strings.Join(r, "; "))
}

// Dial connects to the supervisor at addr, and refuses with ErrForeignPeer
// one served by another user (root or LocalSystem aside); nothing there is
// ErrNoEndpoint.
func Dial(ctx context.Context, addr string) (net.Conn, error) { return dial(ctx, addr) }

// CurrentUserSID returns the SID of the user this process runs as; on Unix
// an error wrapping errors.ErrUnsupported.
func CurrentUserSID() (string, error) { return currentUserSID() }

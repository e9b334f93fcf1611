// Package passwd looks accounts up in the system's user database as the C
// library does, through NSS (files, but also LDAP, SSSD, systemd-homed),
// whether or not the program was built with cgo.
//
// Releases are built without cgo: a static binary starts without the
// dynamic loader and keeps libc out of its resident memory. os/user then
// reads /etc/passwd alone on Linux, and a directory user (the SUDO_USER of
// `sudo hermes-supervisor install --system` on a laptop joined to a
// domain, or the "~name" in a home Hermes recorded, which Python expands
// with pwd.getpwnam) would be unknown. Where os/user does not find an
// account, it is asked of getent, which goes through NSS as libc does.
// With cgo, os/user already asks NSS, and getent is only asked again about
// an account that does not exist.
package passwd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
)

// Lookup returns the account named name.
func Lookup(ctx context.Context, name string) (*user.User, error) {
	return lookupName(ctx, name, fromNSS)
}

// LookupID returns the account whose user id is uid.
func LookupID(ctx context.Context, uid string) (*user.User, error) {
	return lookupID(ctx, uid, fromNSS)
}

// nss asks the whole user database for key (a uid when byID), returning
// notFound where it has no such account: fromNSS, or a test's stand-in.
type nss func(ctx context.Context, key string, byID bool, notFound error) (*user.User, error)

func lookupName(ctx context.Context, name string, ask nss) (*user.User, error) {
	u, err := user.Lookup(name)
	if !errors.As(err, new(user.UnknownUserError)) || !validName(name) {
		return u, err
	}
	return ask(ctx, name, false, err)
}

func lookupID(ctx context.Context, uid string, ask nss) (*user.User, error) {
	u, err := user.LookupId(uid)
	if !errors.As(err, new(user.UnknownUserIdError)) {
		return u, err
	}
	if _, perr := strconv.ParseUint(uid, 10, 32); perr != nil {
		return u, err
	}
	return ask(ctx, uid, true, err)
}

// Current returns the account this process runs as, read by its user id
// as Python's pwd.getpwuid(os.getuid()) reads it; where the process has no
// user id (Windows) or the database has no entry, what os/user says.
func Current(ctx context.Context) (*user.User, error) {
	if uid := os.Getuid(); uid >= 0 {
		if u, err := LookupID(ctx, strconv.Itoa(uid)); err == nil {
			return u, nil
		}
	}
	return user.Current()
}

// validName reports whether name can be asked of getent as a name: no
// option (a leading "-"), no field separator, nothing a line could break
// on, and not all digits, which getent takes for a user id.
func validName(name string) bool {
	if name == "" || name[0] == '-' {
		return false
	}
	if _, err := strconv.ParseUint(name, 10, 64); err == nil {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c == 0x7f || c == ':' {
			return false
		}
	}
	return true
}

// parseEntry reads one passwd line, "name:password:uid:gid:gecos:home:shell",
// as getent prints it, and checks it answers key (a name, or a uid when
// byID). The name is taken as the database gives it: NSS may fold case.
func parseEntry(line, key string, byID bool) (*user.User, error) {
	line = strings.TrimSuffix(line, "\n")
	f := strings.Split(line, ":")
	if len(f) != 7 || strings.ContainsAny(line, "\n\r") {
		return nil, fmt.Errorf("getent passwd %s: not one passwd entry: %q", key, line)
	}
	for _, id := range f[2:4] {
		if _, err := strconv.ParseUint(id, 10, 32); err != nil {
			return nil, fmt.Errorf("getent passwd %s: %q is not a user or group id", key, id)
		}
	}
	if f[0] == "" || (byID && f[2] != key) {
		return nil, fmt.Errorf("getent passwd %s: answered for %q (uid %s)", key, f[0], f[2])
	}
	name, _, _ := strings.Cut(f[4], ",") // the full name is the GECOS field's first part, as os/user reads it
	return &user.User{Username: f[0], Uid: f[2], Gid: f[3], Name: name, HomeDir: f[5]}, nil
}

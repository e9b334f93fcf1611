package passwd

import (
	"context"
	"errors"
	"os"
	"os/user"
	"strconv"
	"testing"
)

func TestValidName(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"alice", true},
		{"alice.smith@corp.example", true},
		{"", false},
		{"-s", false},         // an option to getent
		{"--help", false},     // likewise
		{"1000", false},       // getent takes it for a uid
		{"a:b", false},        // a field separator
		{"a\nroot", false},    // a second line
		{"a\x7f", false},      // DEL
		{"tab\tname", false},  // a control character
		{"ünïcode", true},     // NSS decides what names exist
		{"1000x", true},       // not a number
		{"domain\\bob", true}, // a Samba style name
	} {
		if got := validName(c.name); got != c.ok {
			t.Errorf("validName(%q) = %v, want %v", c.name, got, c.ok)
		}
	}
}

func TestParseEntry(t *testing.T) {
	for _, c := range []struct {
		line, key string
		byID      bool
		want      *user.User // nil: an error
	}{
		{"alice:x:1001:1001:Alice Smith,,,:/home/alice:/bin/bash\n", "alice", false,
			&user.User{Username: "alice", Uid: "1001", Gid: "1001", Name: "Alice Smith", HomeDir: "/home/alice"}},
		{"Alice:*:1001:100::/home/Alice:/bin/sh", "alice", false, // NSS folds case: its name stands
			&user.User{Username: "Alice", Uid: "1001", Gid: "100", HomeDir: "/home/Alice"}},
		{"bob:x:1002:1002:Bob:/home/bob:/bin/sh\n", "1002", true,
			&user.User{Username: "bob", Uid: "1002", Gid: "1002", Name: "Bob", HomeDir: "/home/bob"}},
		{"bob:x:1002:1002:Bob:/home/bob:/bin/sh\n", "1003", true, nil}, // another uid's entry
		{"bob:x:1002:1002:Bob:/home/bob\n", "bob", false, nil},         // six fields
		{"bob:x:1002:1002:Bob:/home/bob:/bin/sh:extra", "bob", false, nil},
		{"bob:x:10a2:1002:Bob:/home/bob:/bin/sh", "bob", false, nil},                            // not a uid
		{"bob:x:1002:-1:Bob:/home/bob:/bin/sh", "bob", false, nil},                              // not a gid
		{"bob:x:1002:1002:Bob:/home/bob:/bin/sh\nroot:x:0:0::/root:/bin/sh", "bob", false, nil}, // two entries
		{":x:1002:1002::/home/x:/bin/sh", "x", false, nil},                                      // no name
		{"", "bob", false, nil},
	} {
		got, err := parseEntry(c.line, c.key, c.byID)
		switch {
		case c.want == nil && err == nil:
			t.Errorf("parseEntry(%q) = %+v, want an error", c.line, got)
		case c.want != nil && err != nil:
			t.Errorf("parseEntry(%q): %v", c.line, err)
		case c.want != nil && *got != *c.want:
			t.Errorf("parseEntry(%q) = %+v, want %+v", c.line, got, c.want)
		}
	}
}

// TestLookupIsOSUsers holds each lookup to os/user for accounts the files
// database has: the fallback changes nothing for them.
func TestLookupIsOSUsers(t *testing.T) {
	ctx := context.Background()
	want, err := user.Current()
	if err != nil {
		t.Skipf("os/user cannot read this process's account here: %v", err)
	}
	got, err := Current(ctx)
	if err != nil || *got != *want {
		t.Fatalf("Current() = %+v, %v; os/user says %+v", got, err, want)
	}
	if uid := os.Getuid(); uid >= 0 {
		if byID, err := LookupID(ctx, strconv.Itoa(uid)); err != nil || *byID != *want {
			t.Errorf("LookupID(%d) = %+v, %v; os/user says %+v", uid, byID, err, want)
		}
	}
	if byName, err := Lookup(ctx, want.Username); err != nil || *byName != *want {
		t.Errorf("Lookup(%q) = %+v, %v; os/user says %+v", want.Username, byName, err, want)
	}
	// Unknown is unknown, in the error os/user gives (on Windows not an
	// UnknownUserError).
	_, osErr := user.Lookup("no-such-user-hermes-supervisor")
	_, err = Lookup(ctx, "no-such-user-hermes-supervisor")
	if err == nil || errors.As(err, new(user.UnknownUserError)) != errors.As(osErr, new(user.UnknownUserError)) {
		t.Errorf("Lookup of an unknown user: %v; os/user says %v", err, osErr)
	}
	_, osErr = user.LookupId("4000000000")
	_, err = LookupID(ctx, "4000000000")
	if err == nil || errors.As(err, new(user.UnknownUserIdError)) != errors.As(osErr, new(user.UnknownUserIdError)) {
		t.Errorf("LookupID of an unknown uid: %v; os/user says %v", err, osErr)
	}
}

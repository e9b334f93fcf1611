//go:build unix

package passwd

import (
	"context"
	"errors"
	"os/user"
	"slices"
	"testing"
)

// TestUnknownAccountsAskNSS holds Lookup and LookupID to their promise: an
// account os/user does not know is asked of the whole database (getent on
// Linux), and one it knows is not. On Windows os/user asks the system
// itself, and says "unknown" in errors of its own.
func TestUnknownAccountsAskNSS(t *testing.T) {
	ctx := context.Background()
	carol := &user.User{Username: "carol@corp", Uid: "700001", Gid: "700001", HomeDir: "/home/carol"}
	var asked []string
	directory := func(_ context.Context, key string, byID bool, notFound error) (*user.User, error) {
		asked = append(asked, key)
		if key == carol.Username || (byID && key == carol.Uid) {
			return carol, nil
		}
		return nil, notFound
	}
	if u, err := lookupName(ctx, "carol@corp", directory); err != nil || u != carol {
		t.Errorf("a directory user by name: %+v, %v", u, err)
	}
	if u, err := lookupID(ctx, "700001", directory); err != nil || u != carol {
		t.Errorf("a directory user by uid: %+v, %v", u, err)
	}
	if _, err := lookupName(ctx, "dave@corp", directory); !errors.As(err, new(user.UnknownUserError)) {
		t.Errorf("a user nobody knows: %v, want user.UnknownUserError", err)
	}
	if _, err := lookupName(ctx, "-dave", directory); !errors.As(err, new(user.UnknownUserError)) {
		t.Errorf("an option for a name: %v, want user.UnknownUserError", err)
	}
	if _, err := lookupID(ctx, "-1", directory); err == nil {
		t.Error("a negative uid was answered")
	}
	if want := []string{"carol@corp", "700001", "dave@corp"}; !slices.Equal(asked, want) {
		t.Errorf("asked the directory for %q, want %q", asked, want)
	}
	asked = nil
	me, err := user.Current()
	if err != nil {
		t.Skipf("os/user cannot read this process's account here: %v", err)
	}
	if _, err := lookupName(ctx, me.Username, directory); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 0 {
		t.Errorf("a user os/user knows was asked again: %q", asked)
	}
}

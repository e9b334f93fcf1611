package service

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/passwd"
)

// Account is the user a system service runs as, as that user's own login
// sees it: installed with sudo, the installing process has root's home and
// sudo's secure_path instead.
type Account struct {
	Name string
	UID  int
	Home string
	// Path is the user's login PATH; empty when it could not be read.
	Path string
}

// pathMarker sets the PATH apart from whatever a login prints (motd,
// profile scripts that echo).
const pathMarker = "hermes-supervisor-path="

// LookupAccount reads name's passwd entry and the PATH of a login shell of
// theirs (su -l, which reads their profile as logging in would); an
// unreadable PATH leaves Path empty rather than failing.
func LookupAccount(ctx context.Context, name string) (Account, error) {
	u, err := passwd.Lookup(ctx, name)
	if err != nil {
		return Account{}, fmt.Errorf("look up user %s: %w", name, err)
	}
	a := Account{Name: u.Username, Home: u.HomeDir}
	if a.UID, err = strconv.Atoi(u.Uid); err != nil {
		a.UID = -1
	}
	// A profile that waits for input or the network must not hang install.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := Command(ctx, []string{"su", "-l", name, "-c", `printf '\n%s%s\n' ` + pathMarker + ` "$PATH"`})
	if out, err := cmd.Output(); err == nil {
		for _, line := range bytes.Split(out, []byte("\n")) {
			if p, ok := strings.CutPrefix(string(line), pathMarker); ok {
				a.Path = p
			}
		}
	}
	return a, nil
}

// Getenv returns getenv as the account's own login would see it: its
// home, name and PATH, and none of the installing user's XDG directories.
func (a Account) Getenv(getenv func(string) string) func(string) string {
	return func(k string) string {
		switch k {
		case "HOME":
			return a.Home
		case "USER", "LOGNAME":
			return a.Name
		case "PATH":
			if a.Path != "" {
				return a.Path
			}
		case "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR":
			return ""
		}
		return getenv(k)
	}
}

//go:build unix

package lockstore

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/passwd"
)

func defaultHomeParent(getenv func(string) string) (string, string, error) {
	h, err := userHome(getenv)
	return h, ".hermes", err
}

// passwdWait bounds the user database lookup of userHome, which may ask
// getent (NSS: LDAP, sssd) where /etc/passwd has no entry.
const passwdWait = 10 * time.Second

// userHome is the user's home as Hermes' Python finds it (Path.home(),
// os.path.expanduser): $HOME, or when HOME is not set (`env -i`, a bare
// service manager, cron) the home of the process's uid in the user
// database. An empty HOME counts as unset here; Python would take it for
// "/", a home no one means.
func userHome(getenv func(string) string) (string, error) {
	if h := getenv("HOME"); h != "" {
		return h, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), passwdWait)
	defer cancel()
	u, err := passwd.Current(ctx)
	if err != nil {
		return "", fmt.Errorf("$HOME is not set, and the user database has no entry for uid %d: %w", os.Getuid(), err)
	}
	if u.HomeDir == "" {
		return "", fmt.Errorf("$HOME is not set, and uid %d has no home directory in the user database", os.Getuid())
	}
	return u.HomeDir, nil
}

package service

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Command returns the command that runs argv, a service manager's tool
// (systemctl, journalctl, launchctl, su), for an install or a control.
//
// As root the caller's environment may be someone else's: a sudoers rule
// with SETENV lets its user set PATH, LD_PRELOAD and any other variable on
// sudo's command line, secure_path notwithstanding. A tool named without a
// directory is then looked for only in the PATH entries that root alone
// can change (judged by the walk every home passes: see rootOnly), and it
// runs with those entries as its PATH and nothing else
// of the environment but what reaches the user's own manager. Otherwise
// it runs as the caller's shell would run it.
func Command(ctx context.Context, argv []string) *exec.Cmd {
	return command(ctx, argv, os.Geteuid() == 0, os.Getenv)
}

// keptForRoot are the variables a tool run as root still gets: the
// address of the user's own manager (systemctl --user as root) and HOME.
// The loader's (LD_*), the locale's and the pagers' are not among them.
var keptForRoot = [...]string{"HOME", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS"}

func command(ctx context.Context, argv []string, asRoot bool, getenv func(string) string) *exec.Cmd {
	if !asRoot {
		return exec.CommandContext(ctx, argv[0], argv[1:]...)
	}
	var dirs []string
	for _, d := range filepath.SplitList(getenv("PATH")) {
		if filepath.IsAbs(d) && rootOnly(d) {
			dirs = append(dirs, d)
		}
	}
	path := argv[0]
	var err error
	switch {
	case !strings.ContainsRune(path, os.PathSeparator):
		path, err = lookIn(dirs, path)
	case !rootOnly(path):
		err = fmt.Errorf("%s: as root, only a program that root alone can change is run", path)
	}
	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = []string{"PATH=" + strings.Join(dirs, string(os.PathListSeparator))}
	for _, k := range keptForRoot {
		if v := getenv(k); v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Err = err
	return cmd
}

// lookIn finds name in dirs: the first regular, executable file there
// that root alone can change.
func lookIn(dirs []string, name string) (string, error) {
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 && rootOnly(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found in the PATH directories only root can change (%s): as root, no other is searched", name, strings.Join(dirs, string(os.PathListSeparator)))
}

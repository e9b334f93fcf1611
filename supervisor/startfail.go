package supervisor

import (
	"errors"
	"io/fs"
	"os/exec"
)

// neverStarts reports whether err, from starting the gateway, is one that
// no retry can cure (the command does not exist or may not be executed),
// and what fixes it.
func neverStarts(err error) (fix string, ok bool) {
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return "install it, put it on PATH, or fix the gateway command (after `run --`, or \"command\" in the config file; " +
			"words after `run` without `--` are taken as the gateway command)", true
	case errors.Is(err, exec.ErrDot):
		return "name it by its path (./name) or put its directory on PATH", true
	case errors.Is(err, fs.ErrPermission), errors.Is(err, errNotExecutable):
		return "make it executable (chmod +x) for the user the supervisor runs as, or fix the gateway command", true
	}
	return "", false
}

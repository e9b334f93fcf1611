package service

// Which launchd domain a job lives in: ours (gui/<uid>, user/<uid> or
// system) and Hermes' own agents of the same home.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// planTimeout bounds the launchctl queries a plan is built from (which
// domain a job lives in, where the user has a session).
const planTimeout = 10 * time.Second

// hermesAgentDir is a directory Hermes' gateway agents may be in, and the
// launchd domains they load into there.
type hermesAgentDir struct {
	dir     string
	domains []string // the first one is where `disable` must succeed
}

// hermesAgentDirs lists where Hermes' own agents for this home can be: the
// user's LaunchAgents, loaded into gui/<uid> or user/<uid>; and for a
// system install also the machine's LaunchDaemons and the invoking user's
// own LaunchAgents (under sudo c.UID and c.UserHome are that user's): a
// Hermes agent of the home left running there would restart the gateway
// against ours.
func (l Launchd) hermesAgentDirs(ctx context.Context, c Config) []hermesAgentDir {
	user := func() hermesAgentDir {
		primary, other := l.sessionDomains(ctx, c.UID)
		return hermesAgentDir{dir: filepath.Join(c.UserHome, "Library", "LaunchAgents"), domains: []string{primary, other}}
	}
	if !c.System {
		return []hermesAgentDir{user()}
	}
	dirs := []hermesAgentDir{{dir: launchdDir(c), domains: []string{"system"}}}
	if c.UID != 0 && c.UserHome != "" {
		dirs = append(dirs, user())
	}
	return dirs
}

// sessionDomains returns the user's launchd domains, the one that exists
// first: gui/<uid> with a GUI login, else user/<uid> (SSH, nobody logged
// in at the Mac).
func (l Launchd) sessionDomains(ctx context.Context, uid int) (primary, other string) {
	gui, user := "gui/"+strconv.Itoa(uid), "user/"+strconv.Itoa(uid)
	if _, err := l.output(ctx, []string{"launchctl", "print", gui}); err == nil {
		return gui, user
	}
	return user, gui
}

// canonicalHome is p with its symlinks resolved when it resolves: Hermes
// writes the resolved path of its home into its plist, so a ~/.hermes that
// is a symlink must be compared by where it leads.
func canonicalHome(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// ErrNoGUISession reports a user agent installed where launchd has no
// domain of the user's at all, neither gui/<uid> nor user/<uid>.
var ErrNoGUISession = errors.New("no launchd session for the user agent")

// agentDomain is the domain install loads our agent into: system; else
// gui/<uid> when the user has a GUI login, else user/<uid> (over SSH, or
// with nobody logged in at the Mac), as Hermes does.
func (l Launchd) agentDomain(ctx context.Context, c Config) (string, error) {
	if c.System {
		return "system", nil
	}
	primary, _ := l.sessionDomains(ctx, c.UID)
	if strings.HasPrefix(primary, "user/") {
		if _, err := l.output(ctx, []string{"launchctl", "print", primary}); err != nil {
			return "", fmt.Errorf("%w: launchd has neither gui/%d nor %s (%v): install with --system, which runs the supervisor as a LaunchDaemon as you, or log in at the Mac first",
				ErrNoGUISession, c.UID, primary, err)
		}
	}
	return primary, nil
}

// loadedDomain is the domain our job is loaded in: gui/<uid> or user/<uid>,
// whichever has it, else the one install would choose.
func (l Launchd) loadedDomain(ctx context.Context, c Config) string {
	if c.System {
		return "system"
	}
	primary, other := l.sessionDomains(ctx, c.UID)
	for _, d := range []string{primary, other} {
		if _, err := l.output(ctx, []string{"launchctl", "print", d + "/" + c.label()}); err == nil {
			return d
		}
	}
	return primary
}

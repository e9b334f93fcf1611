package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/service"
	"github.com/hermes-agent/hermes-supervisor/platform/termtext"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// profileHome resolves --profile as `hermes -p NAME` does
// (resolve_profile_env): under the root of home (the --home given, else
// HERMES_HOME, else Hermes' default home), refusing a name Hermes refuses,
// a profile that does not exist or was deleted, and a --home that names
// another home. It only looks: nothing is created for a profile that
// is not there.
func (g *globals) profileHome(home string) (string, error) {
	name := g.profile
	if err := lockstore.ValidateProfileName(name); err != nil {
		return "", fmt.Errorf("--profile %s: %w", termtext.Quote(name), err)
	}
	abs, err := filepath.Abs(home)
	if err != nil {
		return "", err
	}
	root := lockstore.ProfileRoot(abs)
	ph, err := lockstore.ProfileHome(root, name)
	if err != nil {
		return "", fmt.Errorf("--profile %s: %w", termtext.Quote(name), err)
	}
	if g.home != "" {
		if err := agreeHome(ph, abs, "--home"); err != nil {
			return "", fmt.Errorf("--profile %s: %w", name, err)
		}
	}
	if name == lockstore.DefaultProfile {
		return ph, nil
	}
	if err := profileExists(name, ph); err != nil {
		return "", err
	}
	return ph, nil
}

// profileExists refuses a named profile Hermes' own `-p` would refuse:
// tombstoned (Hermes writes <root>/profiles/.deleted/<name> before it
// removes the directory, and refuses the name from then on), missing, not
// a directory, or a directory with none of a profile's files (a ghost a
// crashed `profile create` or a stray mkdir left; newer Hermes refuses it).
func profileExists(name, home string) error {
	tomb := lockstore.ProfileTombstone(home)
	if _, err := os.Lstat(tomb); err == nil {
		// 78 (EX_CONFIG): a service manager must not restart a supervisor
		// for a deleted profile (RestartPreventExitStatus=78).
		return &exitError{code: exitConfig, err: fmt.Errorf("--profile %s: the profile was deleted (%s exists): Hermes refuses it too; recreate it with `hermes profile create %s`",
			name, termtext.Quote(tomb), name)}
	}
	fi, err := os.Stat(home)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--profile %s: no such profile: %s does not exist; create it with `hermes profile create %s`, or check HERMES_HOME or --home, which set the root",
			name, termtext.Quote(home), name)
	case err != nil:
		return fmt.Errorf("--profile %s: %w", name, err)
	case !fi.IsDir():
		return fmt.Errorf("--profile %s: %s is not a directory, so not a profile", name, termtext.Quote(home))
	}
	for _, f := range lockstore.ProfileIdentityFiles {
		if _, err := os.Lstat(filepath.Join(home, f)); err == nil {
			return nil
		}
	}
	return fmt.Errorf("--profile %s: %s holds none of a profile's files (config.yaml, .env, SOUL.md, profile.yaml, auth.json, state.db), so Hermes does not take it as a profile: create it with `hermes profile create %s`",
		name, termtext.Quote(home), name)
}

// agreeHome refuses two sources that name different homes for one
// command: acting on either would surprise whoever set the other.
func agreeHome(profileHome, other, source string) error {
	o, err := filepath.Abs(other)
	if err != nil {
		return err
	}
	if filepath.Clean(o) == filepath.Clean(profileHome) {
		return nil
	}
	return fmt.Errorf("names the home %s, but %s names %s: pass only one of them", termtext.Quote(profileHome), source, termtext.Quote(o))
}

// gatewayArgv is Hermes' gateway command for home, as Hermes' own units
// run it: `hermes -p NAME gateway run` for a named profile, which is how
// Hermes' scoped readers (gateway status, gateway list, the dashboard)
// tell a profile's gateway from another's; bare for a root home. Never
// --replace: from a named profile it would replace the multiplexer.
func gatewayArgv(home string) []string {
	if name, ok := lockstore.NamedProfile(home); ok {
		return []string{defaultGateway[0], "-p", name, "gateway", "run"}
	}
	return defaultGateway
}

// multiplexerOf returns the root home's gateway when it runs as Hermes'
// multiplexer and serves the named profile of home (read-only: the
// root's gateway_state.json, believed only for its live gateway).
func multiplexerOf(ctx context.Context, home, lockDir string) (lockstore.Multiplexer, string, bool) {
	name, ok := lockstore.NamedProfile(home)
	if !ok {
		return lockstore.Multiplexer{}, "", false
	}
	root := lockstore.ProfileRoot(home)
	prober := procstate.NewProber(procstate.Options{StartTolerance: -1})
	m, ok := lockstore.New(lockstore.Layout{Home: root, LockDir: lockDir}, prober, zap.NewNop(), time.Now).Multiplexer(ctx)
	if !ok || !m.Serves(name) {
		return lockstore.Multiplexer{}, "", false
	}
	return m, root, true
}

// refuseServed refuses to install a supervisor for a profile the root
// home's gateway serves as Hermes' multiplexer, unless --force: Hermes
// refuses that profile's own gateway while it is served (exit 78), and a
// second gateway forced past that would answer the same bots.
func refuseServed(ctx context.Context, c service.Config, f *serviceFlags) error {
	m, root, ok := multiplexerOf(ctx, c.Home, c.LockDir)
	if !ok {
		return nil
	}
	name, _ := lockstore.NamedProfile(c.Home)
	if f.force {
		return nil
	}
	return fmt.Errorf("the root home's gateway (pid %d, %s) runs as Hermes' multiplexer and serves profile %s, so Hermes refuses that profile's own gateway (exit 78): "+
		"supervise the root home instead (`hermes-supervisor install` without --profile), or set gateway.standalone: true in the profile's config.yaml and stop the multiplexer serving it; "+
		"--force installs anyway, and its gateway then fails until the multiplexer stops serving %s",
		m.PID, termtext.Quote(root), name, name)
}

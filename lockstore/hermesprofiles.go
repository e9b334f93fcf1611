package lockstore

// Hermes' profile rules, as NousResearch/hermes-agent applies them: the
// root of a home and the home of a profile (hermes_cli/profiles.py
// resolve_profile_env, which `hermes -p NAME` calls), valid names
// (_PROFILE_ID_RE, _RESERVED_NAMES, normalize_profile_name), the
// tombstone of a deleted profile (hermes_constants.py
// profile_tombstone_path, mark_named_profile_deleted) and the suffix of a
// home's service names (hermes_cli/gateway.py _profile_suffix and
// _profile_arg). Nothing here does I/O: paths are taken as given (the
// caller makes them absolute), and the caller looks at the disk.

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/hermes-agent/hermes-supervisor/procstate/pyparse"
)

// DefaultProfile names the root home's own profile: `-p default` is the
// root itself.
const DefaultProfile = "default"

// profilesDir is the directory of a root that holds its named profiles,
// and deletedDir the one beside them that holds their tombstones.
const (
	profilesDir = "profiles"
	deletedDir  = ".deleted"
)

// profileID is _PROFILE_ID_RE. Python's re.match with `$` would also take
// a name ending in one newline; \z here does not: stricter, never looser.
var profileID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}\z`) })

// reservedProfiles are _RESERVED_NAMES: validate_profile_name refuses
// them, so `hermes -p test` fails even where profiles/test exists.
var reservedProfiles = map[string]bool{"hermes": true, "test": true, "tmp": true, "root": true, "sudo": true}

// ErrProfileName reports a name Hermes' `-p` does not take.
var ErrProfileName = errors.New("not a Hermes profile name")

// ValidateProfileName reports whether `hermes -p name` takes name as it
// is: "default", or a lowercase id of Hermes' grammar that is not
// reserved. Hermes lowercases and trims what a user types first
// (normalize_profile_name); we take only the canonical spelling, so that
// the name we pass on the gateway's argv is the one Hermes' scoped
// readers look for, and say which spelling to use.
func ValidateProfileName(name string) error {
	switch {
	case name == DefaultProfile:
		return nil
	case name == "":
		return fmt.Errorf("%w: it is empty", ErrProfileName)
	case profileID().MatchString(name) && reservedProfiles[name]:
		return fmt.Errorf("%w: %q is reserved by Hermes (hermes, test, tmp, root, sudo)", ErrProfileName, name)
	case profileID().MatchString(name):
		return nil
	}
	if canon := pyparse.Lower(pyparse.Strip(name)); canon != name && (canon == DefaultProfile || profileID().MatchString(canon)) {
		return fmt.Errorf("%w: write it as Hermes stores it, %q", ErrProfileName, canon)
	}
	return fmt.Errorf("%w: use 1 to 64 lowercase letters, digits, - and _, starting with a letter or digit", ErrProfileName)
}

// ProfileRoot returns the root of the Hermes home home, as
// resolve_profile_env finds it from HERMES_HOME: its grandparent when home
// has the shape <root>/profiles/<name>, else home itself. Give it the
// home Hermes would use (HERMES_HOME, else its default home).
func ProfileRoot(home string) string {
	home = filepath.Clean(home)
	parent := filepath.Dir(home)
	if filepath.Base(parent) == profilesDir && parent != home && filepath.Dir(parent) != parent {
		return filepath.Dir(parent)
	}
	return home
}

// ProfileHome returns the home of profile name under root: root itself
// for "default", <root>/profiles/<name> otherwise. The name must be valid
// (ValidateProfileName): it becomes a path component.
func ProfileHome(root, name string) (string, error) {
	if err := ValidateProfileName(name); err != nil {
		return "", err
	}
	if name == DefaultProfile {
		return filepath.Clean(root), nil
	}
	return filepath.Join(root, profilesDir, name), nil
}

// ProfilesDir returns <root>/profiles, where the named profiles live.
func ProfilesDir(root string) string { return filepath.Join(root, profilesDir) }

// NamedProfile returns the profile name home has, as `-p` names it: the
// last element of a home of the shape <root>/profiles/<name> whose name
// `hermes -p` takes; "" (and false) for a root home, and for a home whose
// name Hermes would refuse (which Hermes' units run without --profile).
func NamedProfile(home string) (string, bool) {
	home = filepath.Clean(home)
	if ProfileRoot(home) == home {
		return "", false
	}
	name := filepath.Base(home)
	if name == DefaultProfile || ValidateProfileName(name) != nil {
		return "", false
	}
	return name, true
}

// ProfileTombstone returns where Hermes marks profileHome deleted: beside
// it, <root>/profiles/.deleted/<name>, so that a late mkdir or rmtree of
// the home cannot erase the fact.
func ProfileTombstone(profileHome string) string {
	profileHome = filepath.Clean(profileHome)
	return filepath.Join(filepath.Dir(profileHome), deletedDir, filepath.Base(profileHome))
}

// ProfileIdentityFiles are the files of which a named profile's home holds
// at least one (hermes_constants.py _PROFILE_IDENTITY_MARKERS): newer
// Hermes refuses `-p` for a directory with none, a ghost a crashed create
// or a stray mkdir left.
var ProfileIdentityFiles = []string{"config.yaml", ".env", "SOUL.md", "profile.yaml", "auth.json", "state.db"}

// ServiceSuffix returns what Hermes appends to a home's service names,
// "-" joined (hermes-gateway-<suffix>, ai.hermes.gateway-<suffix>): the
// profile name for a named profile's home, "" for a root home. Hermes
// gives other homes (not its native ~/.hermes, not a profile) a hash; a
// supervisor service for them keeps the plain name, as it always had, so
// that an install made before profiles keeps its unit.
func ServiceSuffix(home string) string {
	name, _ := NamedProfile(home)
	return name
}

package service

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A service definition is a privileged file: a root-owned systemd unit, a
// LaunchDaemon, a service run as the user. The values rendered into it
// come from flags, the environment and files the installing user (or any
// process running as them) can write. Every one of them is checked here,
// once, before any renderer sees it, and the renderers quote what is left
// by their format's own rules (docs/security.md, "Inputs that shape a
// privileged file").

// ErrUnsafeValue reports a value that no service definition may hold: a
// control character, a line or paragraph separator, a bidirectional
// override, a Unicode noncharacter, or bytes that are not UTF-8.
var ErrUnsafeValue = errors.New("unsafe value for a service definition")

// Origin says where one value of a Config came from.
type Origin struct {
	// From names the source for a person: a flag ("--home"), an
	// environment variable ("HERMES_HOME") or a file ("config file
	// /home/ann/.hermes/hermes-supervisor.json, key \"home\"").
	From string
	// Unseen says the installing user did not type the value on this
	// command line: a file or the environment chose it. Under sudo such a
	// value is shown in the plan before anything is written.
	Unseen bool
}

func (o Origin) String() string {
	if o.From == "" {
		return "the caller"
	}
	return o.From
}

// Origins says where each value rendered into a definition came from; an
// empty Origin is named "the caller".
type Origins struct {
	Exe, Home, LockDir, ConfigFile, Path, User, UserHome, Command Origin
	// StopTimeout is set only when a config file chose the stop timeout.
	StopTimeout Origin
}

// unsafeRune reports whether r may not appear in any rendered value: every
// C0 and C1 control and DEL (a newline ends a unit line, and XML 1.0 cannot
// carry most of them at all), the Unicode line and paragraph separators
// (line breaks to some parsers and editors), and the bidirectional marks,
// embeddings, overrides and isolates, which make the plan a person reads
// differ from the bytes written. It also takes the 66 noncharacters
// (U+FDD0 to U+FDEF, and the last two of every plane): systemd takes none
// of them in a unit, neither raw nor C-escaped, and drops the whole
// Environment= line that holds one, and XML 1.0 cannot carry U+FFFE or
// U+FFFF, which Go's encoder turns into U+FFFD, another path.
func unsafeRune(r rune) bool {
	switch {
	case unicode.IsControl(r), r == utf8.RuneError:
		return true
	case r >= '\ufdd0' && r <= '\ufdef', r&0xfffe == 0xfffe:
		return true
	case r == '\u2028', r == '\u2029', r == '\u061c', r == '\u200e', r == '\u200f', r == '\ufeff':
		return true
	case r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069':
		return true
	}
	return false
}

// checkValue refuses v, the what of a definition, when it holds an unsafe
// rune or is not UTF-8, naming the value, its source and the first bad
// character in one line.
func checkValue(what, v string, from Origin) error {
	for i, r := range v {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(v[i:]); n == 1 {
				return fmt.Errorf("%w: %s %s (from %s) is not UTF-8 at byte %d: fix the value there", ErrUnsafeValue, what, strconv.Quote(v), from, i)
			}
		}
		if unsafeRune(r) {
			return fmt.Errorf("%w: %s %s (from %s) holds %U at byte %d; a service definition may hold no control character, line separator, bidirectional mark or noncharacter: fix the value there",
				ErrUnsafeValue, what, strconv.Quote(v), from, r, i)
		}
	}
	return nil
}

// namedValue is one value of a Config, named for a person with its source.
type namedValue struct {
	what, v string
	from    Origin
}

// commandLineValues are the values of c that the service's command line
// holds.
func (c Config) commandLineValues() []namedValue {
	vals := []namedValue{
		{"the binary path", c.Exe, c.Origins.Exe},
		{"the Hermes home", c.Home, c.Origins.Home},
		{"the lock dir", c.LockDir, c.Origins.LockDir},
	}
	if c.ConfigFile != "" {
		vals = append(vals, namedValue{"the config file", c.ConfigFile, c.Origins.ConfigFile})
	}
	for i, w := range c.Command {
		vals = append(vals, namedValue{fmt.Sprintf("word %d of the gateway command", i+1), w, c.Origins.Command})
	}
	return vals
}

// checkValues refuses the first value of c that no definition may hold.
// It is the one gate every Install passes before rendering; the renderers
// check again as they write.
func (c Config) checkValues() error {
	vals := append(c.commandLineValues(),
		namedValue{"the service's user", c.User, c.Origins.User},
		namedValue{"the user's home directory", c.UserHome, c.Origins.UserHome})
	for _, dir := range filepath.SplitList(c.Path) {
		vals = append(vals, namedValue{"the PATH entry", dir, c.Origins.Path})
	}
	// The whole PATH too: a separator SplitList hides, such as a control
	// in ';' or ':'.
	vals = append(vals, namedValue{"the PATH", c.Path, c.Origins.Path})
	for _, v := range vals {
		if err := checkValue(v.what, v.v, v.from); err != nil {
			return err
		}
	}
	return nil
}

// validateInstall is Validate plus the value check: what every manager's
// Install runs before it renders anything.
func (c Config) validateInstall(perUserDir bool) error {
	if err := c.Validate(perUserDir); err != nil {
		return err
	}
	return c.checkValues()
}

// noteOrigins adds a note for every rendered value the installing user did
// not type: under sudo a value from their config file, their login's PATH
// or an environment sudo kept is chosen by whatever can write their files,
// and the person running sudo must see it before a root-owned file holds it.
func (p *Plan) noteOrigins(c Config) {
	for _, v := range []struct {
		what, v string
		from    Origin
	}{
		{"Hermes home", c.Home, c.Origins.Home},
		{"lock dir", c.LockDir, c.Origins.LockDir},
		{"config file", c.ConfigFile, c.Origins.ConfigFile},
		{"PATH", c.Path, c.Origins.Path},
		{"gateway command", Join(c.Command), c.Origins.Command},
	} {
		if v.from.Unseen && v.v != "" {
			p.Notes = append(p.Notes, fmt.Sprintf("the service's %s %s comes from %s, not from this command line: check it before you go on", v.what, strconv.Quote(v.v), v.from))
		}
	}
}

// safeSystemdWord reports whether s may be written into a unit unquoted:
// only characters no systemd parser treats specially (% and $ are doubled
// by the caller).
func safeSystemdWord(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			strings.ContainsRune("/._,:=+@-%$", r))
	}) < 0
}

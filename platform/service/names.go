package service

import (
	"fmt"
	"regexp"
)

// One service per Hermes home: a named profile's supervisor has names of
// its own, as Hermes' own gateway services do (hermes-gateway-<profile>,
// ai.hermes.gateway-<profile>, Hermes_Gateway_<profile>), so that a second
// profile's install never overwrites the first's. A root home keeps the
// plain names, which every install before profiles used.

// suffixWord is what a suffix may be: a Hermes profile id, which no
// service manager reads anything into.
var suffixWord = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// NameFor returns the service name (the systemd unit's stem, the Windows
// service's name) of the home whose suffix is suffix: Name, or
// Name-suffix.
func NameFor(suffix string) string {
	if suffix == "" {
		return Name
	}
	return Name + "-" + suffix
}

// LabelFor returns the launchd label of the home whose suffix is suffix:
// Label, or Label-suffix.
func LabelFor(suffix string) string {
	if suffix == "" {
		return Label
	}
	return Label + "-" + suffix
}

// name is c's service name, label its launchd label, and logName the
// stem of its launchd log files.
func (c Config) name() string  { return NameFor(c.Suffix) }
func (c Config) label() string { return LabelFor(c.Suffix) }

// command is the hermes-supervisor command line that does verb to c's
// service, for an error that tells the user what to run: a named
// profile's needs its -p.
func (c Config) command(verb string) string {
	if c.Suffix == "" {
		return "hermes-supervisor " + verb
	}
	return "hermes-supervisor -p " + c.Suffix + " " + verb
}

// checkSuffix refuses a suffix that is no profile id.
func (c Config) checkSuffix() error {
	if c.Suffix != "" && !suffixWord.MatchString(c.Suffix) {
		return fmt.Errorf("service: %q is no profile name to name a service by", c.Suffix)
	}
	return nil
}

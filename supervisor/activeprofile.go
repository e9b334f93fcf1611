package supervisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/hermes-agent/hermes-supervisor/platform/termtext"
	"github.com/hermes-agent/hermes-supervisor/procstate/pyparse"
)

// ActiveProfileFile is Hermes' sticky profile choice in the root home
// (`hermes profile use NAME`).
const ActiveProfileFile = "active_profile"

// ErrActiveProfile reports that the root home's active_profile would turn
// a bare `hermes gateway run` into another profile's gateway.
var ErrActiveProfile = errors.New("the root home's active_profile names another profile")

// checkActiveProfile refuses a start of a bare `hermes gateway run` for
// the root home while <root>/active_profile names a profile: Hermes' CLI
// then serves that profile instead (hermes_cli/main.py reads the file
// whenever HERMES_HOME's parent is not named "profiles", Hermes issue
// #22502), so the root home would have no gateway while we called it
// running, and the profile's own supervisor would meet a gateway it
// cannot own. `-p default` would pin the root on newer Hermes only: older
// ones map it to ~/.hermes whatever HERMES_HOME says, and call a root
// gateway with -p on its argv not running; so we refuse, and say what to do.
func (s *Supervisor) checkActiveProfile() error {
	if s.named || !bareHermesGateway(s.cfg.Command) {
		return nil
	}
	path := filepath.Join(s.cfg.Layout.Home, ActiveProfileFile)
	b, err := os.ReadFile(path)
	if err != nil || !utf8.Valid(b) {
		// Hermes skips a file it cannot read or decode, and so do we.
		return nil
	}
	name := pyparse.Strip(string(b))
	if name == "" || name == "default" {
		return nil
	}
	return fmt.Errorf("%w: %s names profile %s, so `hermes gateway run` for the root home would serve that profile instead: "+
		"run `hermes profile use default` (or remove the file) to supervise the root home, or supervise that profile with `hermes-supervisor -p NAME`",
		ErrActiveProfile, termtext.Quote(path), termtext.Quote(name))
}

// bareHermesGateway reports Hermes' gateway command with no profile on
// its argv (the program by any path), which is the one that reads
// active_profile.
func bareHermesGateway(argv []string) bool {
	if len(argv) < 3 {
		return false
	}
	prog := strings.ToLower(filepath.Base(argv[0]))
	return (prog == "hermes" || prog == "hermes.exe") && argv[1] == "gateway" && argv[2] == "run"
}

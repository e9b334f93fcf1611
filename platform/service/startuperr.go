package service

import (
	"fmt"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/platform/termtext"
)

// ReportStartupError records err, which ended `run --service` before or
// instead of supervising, where someone will read it: a line in logPath
// (the home's hermes-supervisor.log; skipped when empty) and, on Windows,
// the Application event log under the service's name (the home's, see
// NameFor). A service has no stderr, and the user otherwise sees only
// error 1053 or 1067 and a recovery loop.
func ReportStartupError(name, logPath string, err error) {
	// One log line, escaped: the error may name a file of the home.
	msg := termtext.Line(fmt.Sprintf("hermes-supervisor could not run as a service: %v", err))
	if logPath != "" {
		// Never through a link, reparse point or FIFO planted there.
		if f, ferr := safefs.OpenAppend(logPath); ferr == nil {
			fmt.Fprintf(f, "%s\tERROR\t%s\n", time.Now().UTC().Format(time.RFC3339), msg)
			f.Close()
		}
	}
	reportEvent(name, msg)
}

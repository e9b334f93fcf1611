package journald

import (
	"github.com/coreos/go-systemd/v22/journal"
)

// underJournal trusts JOURNAL_STREAM only when it names our stderr: a
// child of a service inherits the variable with other output.
func underJournal() bool {
	ok, err := journal.StderrIsJournalStream()
	return ok && err == nil
}

func journalSend(msg string, priority int, vars map[string]string) error {
	return journal.Send(msg, journal.Priority(priority), vars)
}

//go:build !linux

package journald

import (
	"errors"
)

// underJournal is false: journald runs on Linux only.
func underJournal() bool { return false }

func journalSend(string, int, map[string]string) error {
	return errors.New("no journald on this system")
}

//go:build unix

package supervisor

import (
	"testing"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

func TestHostileReadsAreRefused(t *testing.T) {
	testdir.Refused(t, "ReadStatusFile", func(path string) error { _, err := ReadStatusFile(path); return err },
		safefs.ErrNotRegular, safefs.ErrTooBig)
}

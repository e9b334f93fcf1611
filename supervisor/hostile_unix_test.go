//go:build unix

package supervisor

import (
	"errors"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testdir"
	"github.com/hermes-agent/hermes-supervisor/platform"
)

func TestHostileReadsAreRefused(t *testing.T) {
	for name, path := range testdir.Hostile(t, t.TempDir()) {
		t.Run(name, func(t *testing.T) {
			err := testdir.Within(t, "ReadStatusFile", func() error { _, err := ReadStatusFile(path); return err })
			if !errors.Is(err, platform.ErrNotRegular) && !errors.Is(err, platform.ErrTooBig) {
				t.Errorf("ReadStatusFile: %v", err)
			}
		})
	}
}

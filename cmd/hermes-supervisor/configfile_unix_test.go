//go:build unix

package main

import (
	"errors"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testdir"
	"github.com/hermes-agent/hermes-supervisor/platform"
)

func TestHostileConfigFileIsRefused(t *testing.T) {
	for name, path := range testdir.Hostile(t, t.TempDir()) {
		t.Run(name, func(t *testing.T) {
			err := testdir.Within(t, "readFileConfig", func() error { _, err := readFileConfig(path); return err })
			if !errors.Is(err, platform.ErrNotRegular) && !errors.Is(err, platform.ErrTooBig) {
				t.Errorf("readFileConfig: %v", err)
			}
		})
	}
}

//go:build unix

package main

import (
	"testing"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

func TestHostileConfigFileIsRefused(t *testing.T) {
	testdir.Refused(t, "readFileConfig", func(path string) error { _, err := readFileConfig(path); return err },
		safefs.ErrNotRegular, safefs.ErrTooBig)
}

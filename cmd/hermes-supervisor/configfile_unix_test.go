//go:build unix

package main

import (
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testdir"
	"github.com/hermes-agent/hermes-supervisor/platform"
)

func TestHostileConfigFileIsRefused(t *testing.T) {
	testdir.Refused(t, "readFileConfig", func(path string) error { _, err := readFileConfig(path); return err },
		platform.ErrNotRegular, platform.ErrTooBig)
}

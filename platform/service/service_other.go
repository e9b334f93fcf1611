//go:build !linux && !darwin && !windows

package service

import (
	"fmt"
	"os"
)

// unsupported refuses every action: this system has no service manager we
// know how to drive.
type unsupported struct{}

func newManager() Manager { return unsupported{} }

const waitsOnStop = false

func (unsupported) Install(Config, bool) (Plan, error) { return Plan{}, unsupportedErr() }
func (unsupported) Uninstall(Config) (Plan, error)     { return Plan{}, unsupportedErr() }
func (unsupported) Installed(Config) []Definition      { return nil }
func (unsupported) Control(Config, string) (Plan, error) {
	return Plan{}, unsupportedErr()
}

func unsupportedErr() error {
	return fmt.Errorf("%w: run `hermes-supervisor run` from your init system instead", ErrUnsupported)
}

func isAdmin() bool { return os.Geteuid() == 0 }

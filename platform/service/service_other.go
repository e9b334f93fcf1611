//go:build !linux && !darwin

package service

import "fmt"

// New returns a manager that refuses every action: installing a Windows
// service is not built yet.
func New() Manager { return unsupported{} }

type unsupported struct{}

func (unsupported) Install(Config, bool) (Plan, error) { return Plan{}, unsupportedErr() }
func (unsupported) Uninstall(Config) (Plan, error)     { return Plan{}, unsupportedErr() }
func (unsupported) Control(Config, string) (Plan, error) {
	return Plan{}, unsupportedErr()
}

func unsupportedErr() error {
	return fmt.Errorf("%w: Windows service support is not built yet; run `hermes-supervisor run` from a logon Scheduled Task instead", ErrUnsupported)
}

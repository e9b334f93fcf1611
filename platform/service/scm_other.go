//go:build !windows

package service

import "fmt"

func (SCM) install(Config, bool) (Plan, error)   { return Plan{}, errNoSCM() }
func (SCM) uninstall(Config) (Plan, error)       { return Plan{}, errNoSCM() }
func (SCM) control(Config, string) (Plan, error) { return Plan{}, errNoSCM() }
func (SCM) installed(Config) []Definition        { return nil }

func errNoSCM() error {
	return fmt.Errorf("%w: the Windows service control manager exists only on Windows", ErrUnsupported)
}

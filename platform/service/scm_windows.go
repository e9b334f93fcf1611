package service

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc/mgr"
)

// withManager connects to the service manager with only the rights
// access names: mgr.Connect asks for all of them, which a user who is not
// an administrator never gets, even to start a service they may start.
func withManager(access uint32, f func(*mgr.Mgr) error) error {
	h, err := windows.OpenSCManager(nil, nil, access)
	if err != nil {
		return fmt.Errorf("connect to the service manager: %w (run as an administrator)", err)
	}
	sm := &mgr.Mgr{Handle: h}
	defer sm.Disconnect()
	return f(sm)
}

// withService opens our service name (a home's, see NameFor) with only
// the rights access names.
func withService(name string, access uint32, f func(*mgr.Service) error) error {
	return withManager(windows.SC_MANAGER_CONNECT, func(sm *mgr.Mgr) error {
		wname, err := windows.UTF16PtrFromString(name)
		if err != nil {
			return err
		}
		h, err := windows.OpenService(sm.Handle, wname, access)
		if err != nil {
			return fmt.Errorf("open service %s: %w (is it installed?)", name, err)
		}
		s := &mgr.Service{Name: name, Handle: h}
		defer s.Close()
		return f(s)
	})
}

// installed opens the service manager and the service for reading only,
// so that a user who is not an administrator learns it exists (and `stop`
// finds the home it runs for) rather than "nothing installed".
func (SCM) installed(c Config) []Definition {
	name := c.name()
	sm, err := windows.OpenSCManager(nil, nil, windows.SC_MANAGER_CONNECT)
	if err != nil {
		return nil
	}
	defer windows.CloseServiceHandle(sm)
	wname, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return nil
	}
	h, err := windows.OpenService(sm, wname, windows.SERVICE_QUERY_CONFIG)
	if err != nil {
		return nil
	}
	defer windows.CloseServiceHandle(h)
	d := Definition{System: true, Path: name}
	if bin, err := binaryPath(h); err == nil {
		if args, err := windows.DecomposeCommandLine(bin); err == nil {
			for i, a := range args {
				if a == "--home" && i+1 < len(args) {
					d.Home = args[i+1]
				}
			}
		}
	}
	return []Definition{d}
}

// binaryPath reads the service's command line through QueryServiceConfig
// itself: mgr's Config also asks for options older service managers (and
// Wine's) do not keep, and fails there.
func binaryPath(h windows.Handle) (string, error) {
	var need uint32
	_ = windows.QueryServiceConfig(h, nil, 0, &need)
	if need == 0 {
		return "", errors.New("QueryServiceConfig reported no size")
	}
	buf := make([]byte, need)
	qc := (*windows.QUERY_SERVICE_CONFIG)(unsafe.Pointer(&buf[0]))
	if err := windows.QueryServiceConfig(h, qc, need, &need); err != nil {
		return "", err
	}
	return windows.UTF16PtrToString(qc.BinaryPathName), nil
}

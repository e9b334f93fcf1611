package service

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
)

// currentAccount names the user running install as the service manager
// wants a service account: DOMAIN\name (the machine's name for a local
// account).
func currentAccount() (string, error) {
	tu, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return "", fmt.Errorf("read the installing user: %w", err)
	}
	acct, dom, _, err := tu.User.Sid.LookupAccount("")
	if err != nil {
		return "", fmt.Errorf("name the installing user: %w", err)
	}
	return dom + `\` + acct, nil
}

// The LSA calls x/sys/windows does not wrap.
var (
	advapi32            = windows.NewLazySystemDLL("advapi32.dll")
	lsaOpenPolicy       = advapi32.NewProc("LsaOpenPolicy")
	lsaAddAccountRights = advapi32.NewProc("LsaAddAccountRights")
	lsaClose            = advapi32.NewProc("LsaClose")
)

type lsaUnicodeString struct {
	Length, MaximumLength uint16
	Buffer                *uint16
}

type lsaObjectAttributes struct {
	Length                   uint32
	RootDirectory            windows.Handle
	ObjectName               *lsaUnicodeString
	Attributes               uint32
	SecurityDescriptor       uintptr
	SecurityQualityOfService uintptr
}

const (
	policyCreateAccount = 0x10
	policyLookupNames   = 0x800
)

// grantServiceLogon gives the account sid the "log on as a service" right,
// without which the service manager cannot start a service as it (error
// 1069); the Services console grants it the same way.
func grantServiceLogon(sid string) error {
	s, err := windows.StringToSid(sid)
	if err != nil {
		return fmt.Errorf("parse SID %s: %w", sid, err)
	}
	var attrs lsaObjectAttributes
	attrs.Length = uint32(unsafe.Sizeof(attrs))
	var pol windows.Handle
	if st, _, _ := lsaOpenPolicy.Call(0, uintptr(unsafe.Pointer(&attrs)), policyCreateAccount|policyLookupNames, uintptr(unsafe.Pointer(&pol))); st != 0 {
		return fmt.Errorf("LsaOpenPolicy: %w", windows.NTStatus(st))
	}
	defer lsaClose.Call(uintptr(pol)) //nolint:errcheck // nothing to do about it
	right, err := windows.UTF16FromString("SeServiceLogonRight")
	if err != nil {
		return err
	}
	us := lsaUnicodeString{Length: uint16((len(right) - 1) * 2), MaximumLength: uint16(len(right) * 2), Buffer: &right[0]}
	if st, _, _ := lsaAddAccountRights.Call(uintptr(pol), uintptr(unsafe.Pointer(s)), uintptr(unsafe.Pointer(&us)), 1); st != 0 {
		return fmt.Errorf("LsaAddAccountRights SeServiceLogonRight: %w", windows.NTStatus(st))
	}
	return nil
}

// grantInstaller sets the service's DACL to serviceSDDL(installer).
func grantInstaller(h windows.Handle, installer string) error {
	sd, err := windows.SecurityDescriptorFromString(serviceSDDL(installer))
	if err != nil {
		return fmt.Errorf("build the service's security descriptor: %w", err)
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return err
	}
	if err := windows.SetSecurityInfo(h, windows.SE_SERVICE, windows.DACL_SECURITY_INFORMATION, nil, nil, dacl, nil); err != nil {
		return fmt.Errorf("set the service's DACL: %w", err)
	}
	return nil
}

// pinEnvironment sets the service's registry Environment, which the
// service manager adds to the environment it starts the service with:
// a service gets the machine's variables, never the user's own PATH.
func pinEnvironment(env []string) error {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, `SYSTEM\CurrentControlSet\Services\`+Name, registry.SET_VALUE)
	if err != nil {
		return fmt.Errorf("open the service's registry key: %w", err)
	}
	defer k.Close()
	if err := k.SetStringsValue("Environment", env); err != nil {
		return fmt.Errorf("set the service's Environment: %w", err)
	}
	return nil
}

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
	lsaEnumRights       = advapi32.NewProc("LsaEnumerateAccountRights")
	lsaFreeMemory       = advapi32.NewProc("LsaFreeMemory")
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

// serviceLogonRight is the "log on as a service" right.
const serviceLogonRight = "SeServiceLogonRight"

// grantServiceLogon gives the account sid (named account) the "log on as
// a service" right, without which the service manager cannot start a
// service as it (error 1069); the Services console grants it the same
// way. When Windows refuses the grant (a domain policy that sets the
// right, a machine without the LSA) and the account does not hold the
// right already, the error says how to grant it by hand.
func grantServiceLogon(sid, account string) error {
	err := addAccountRight(sid, serviceLogonRight)
	if err == nil {
		return nil
	}
	if held, herr := hasAccountRight(sid, serviceLogonRight); herr == nil && held {
		return nil
	}
	return fmt.Errorf("grant %s the right to log on as a service: %w; without it the service cannot start (error 1069): run secpol.msc, open Local Policies > User Rights Assignment > Log on as a service, add %s (or ask your domain administrator, when a group policy sets it), then rerun install",
		account, err, account)
}

// lsaPolicy opens the local LSA policy with access.
func lsaPolicy(access uintptr) (windows.Handle, error) {
	var attrs lsaObjectAttributes
	attrs.Length = uint32(unsafe.Sizeof(attrs))
	var pol windows.Handle
	if err := lsaOpenPolicy.Find(); err != nil {
		return 0, err
	}
	if st, _, _ := lsaOpenPolicy.Call(0, uintptr(unsafe.Pointer(&attrs)), access, uintptr(unsafe.Pointer(&pol))); st != 0 {
		return 0, fmt.Errorf("LsaOpenPolicy: %w", windows.NTStatus(st))
	}
	return pol, nil
}

func addAccountRight(sid, right string) error {
	s, err := windows.StringToSid(sid)
	if err != nil {
		return fmt.Errorf("parse SID %s: %w", sid, err)
	}
	pol, err := lsaPolicy(policyCreateAccount | policyLookupNames)
	if err != nil {
		return err
	}
	defer lsaClose.Call(uintptr(pol)) //nolint:errcheck // nothing to do about it
	r, err := windows.UTF16FromString(right)
	if err != nil {
		return err
	}
	us := lsaUnicodeString{Length: uint16((len(r) - 1) * 2), MaximumLength: uint16(len(r) * 2), Buffer: &r[0]}
	if st, _, _ := lsaAddAccountRights.Call(uintptr(pol), uintptr(unsafe.Pointer(s)), uintptr(unsafe.Pointer(&us)), 1); st != 0 {
		return fmt.Errorf("LsaAddAccountRights %s: %w", right, windows.NTStatus(st))
	}
	return nil
}

// hasAccountRight reports whether the account sid holds right itself (not
// through a group: the LSA lists an account's own rights only, which is
// what a grant adds).
func hasAccountRight(sid, right string) (bool, error) {
	s, err := windows.StringToSid(sid)
	if err != nil {
		return false, fmt.Errorf("parse SID %s: %w", sid, err)
	}
	pol, err := lsaPolicy(policyLookupNames)
	if err != nil {
		return false, err
	}
	defer lsaClose.Call(uintptr(pol)) //nolint:errcheck // nothing to do about it
	var list *lsaUnicodeString
	var n uint32
	st, _, _ := lsaEnumRights.Call(uintptr(pol), uintptr(unsafe.Pointer(s)), uintptr(unsafe.Pointer(&list)), uintptr(unsafe.Pointer(&n)))
	if st == uintptr(windows.STATUS_OBJECT_NAME_NOT_FOUND) {
		return false, nil // an account with no rights of its own
	}
	if st != 0 {
		return false, fmt.Errorf("LsaEnumerateAccountRights: %w", windows.NTStatus(st))
	}
	defer lsaFreeMemory.Call(uintptr(unsafe.Pointer(list))) //nolint:errcheck // nothing to do about it
	for _, u := range unsafe.Slice(list, n) {
		if windows.UTF16ToString(unsafe.Slice(u.Buffer, u.Length/2)) == right {
			return true, nil
		}
	}
	return false, nil
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

// pinEnvironment sets the registry Environment of the service name, which
// the service manager adds to the environment it starts the service with:
// a service gets the machine's variables, never the user's own PATH.
func pinEnvironment(name string, env []string) error {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, `SYSTEM\CurrentControlSet\Services\`+name, registry.SET_VALUE)
	if err != nil {
		return fmt.Errorf("open the service's registry key: %w", err)
	}
	defer k.Close()
	if err := k.SetStringsValue("Environment", env); err != nil {
		return fmt.Errorf("set the service's Environment: %w", err)
	}
	return nil
}

package service

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"golang.org/x/sys/windows"
)

// administrators is the SID of BUILTIN\Administrators, which owns what an
// elevated administrator creates (unless a policy says otherwise).
const administrators = "S-1-5-32-544"

// homeOwner returns the SID string of the owner of path.
func homeOwner(path string) (string, error) {
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return "", fmt.Errorf("read the owner of %s: %w", path, err)
	}
	owner, _, err := sd.Owner()
	if err != nil || owner == nil {
		return "", fmt.Errorf("read the owner of %s: %w", path, err)
	}
	return owner.String(), nil
}

// checkHomeOwner compares the owner of the home (ownerSID, "" when the home
// does not exist yet) with the account the service would run as: the
// installer, or the Administrators group for an elevated installer. A
// mismatch is refused unless allowed, and then noted.
func checkHomeOwner(home, ownerSID, installerSID, account string, elevated, allowed bool) (note string, err error) {
	if ownerSID == "" || ownerSID == installerSID || (elevated && ownerSID == administrators) {
		return "", nil
	}
	owner := ownerSID
	if s, err := windows.StringToSid(ownerSID); err == nil {
		if a, d, _, err := s.LookupAccount(""); err == nil {
			owner = d + `\` + a
		}
	}
	if allowed {
		return fmt.Sprintf("the service runs as %s, but %s belongs to %s (--run-as-installer): the gateway runs with %s's rights, files and %%LOCALAPPDATA%%, not %s's", account, home, owner, account, owner), nil
	}
	return "", fmt.Errorf("%w: %s belongs to %s, and the service would run as %s, the account this elevated shell runs as (UAC asked for another administrator's credentials?): install from a shell of %s, elevated by that user (or, if this is meant, rerun with --run-as-installer: the gateway then runs with %s's rights and files)",
		ErrHomeOwner, home, owner, account, owner, account)
}

// The logon calls x/sys/windows does not wrap.
var logonUserW = windows.NewLazySystemDLL("advapi32.dll").NewProc("LogonUserW")

const (
	logon32LogonNetwork    = 3
	logon32LogonService    = 5
	logon32ProviderDefault = 0
)

// logonUser logs account on with password as typ, the way the service
// manager will, and closes the token: a wrong password is found before a
// service is created that would fail with 1069 at every start.
func logonUser(account, password string, typ uint32) error {
	dom, user, ok := strings.Cut(account, `\`)
	if !ok {
		dom, user = ".", account
	}
	u, err := windows.UTF16PtrFromString(user)
	if err != nil {
		return err
	}
	d, err := windows.UTF16PtrFromString(dom)
	if err != nil {
		return err
	}
	p, err := windows.UTF16PtrFromString(password)
	if err != nil {
		return err
	}
	var tok windows.Token
	r, _, e := logonUserW.Call(uintptr(unsafe.Pointer(u)), uintptr(unsafe.Pointer(d)), uintptr(unsafe.Pointer(p)),
		uintptr(typ), logon32ProviderDefault, uintptr(unsafe.Pointer(&tok)))
	if r == 0 {
		return e
	}
	// Only the logon matters; Wine's hands out a token no CloseHandle
	// accepts.
	_ = tok.Close()
	return nil
}

// checkLogon tries the password as the service manager will use it
// (a service logon; a network logon where the service right is not yet
// effective) and says what each refusal means.
func checkLogon(logon func(account, password string, typ uint32) error, account, password string) error {
	err := logon(account, password, logon32LogonService)
	if errors.Is(err, windows.ERROR_LOGON_TYPE_NOT_GRANTED) {
		err = logon(account, password, logon32LogonNetwork)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, windows.ERROR_LOGON_FAILURE):
		return fmt.Errorf("%w: %s (%w): give the account's password, not its Windows Hello PIN; a Microsoft account logs on with its Microsoft account password; an account that signs in only with a PIN, or an Entra ID account without a local password, cannot run a service: set a password for it, or install as a local account that has one", ErrLogon, account, err)
	case errors.Is(err, windows.ERROR_ACCOUNT_RESTRICTION):
		return fmt.Errorf("%w: %s (%w): an account with a blank password cannot log on as a service: set a password for it (Settings > Accounts > Sign-in options), then rerun install", ErrLogon, account, err)
	case errors.Is(err, windows.ERROR_ACCOUNT_DISABLED), errors.Is(err, windows.ERROR_ACCOUNT_LOCKED_OUT), errors.Is(err, windows.ERROR_PASSWORD_EXPIRED), errors.Is(err, windows.ERROR_PASSWORD_MUST_CHANGE):
		return fmt.Errorf("%w: %s (%w): fix the account in Settings or lusrmgr.msc, then rerun install", ErrLogon, account, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrLogon, account, err)
}

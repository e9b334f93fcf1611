package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/ctlsock"

	"golang.org/x/sys/windows"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

func ownerTestConfig(t *testing.T) Config {
	dir := testdir.New(t)
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	return Config{Exe: `C:\hermes-supervisor.exe`, Home: home, LockDir: filepath.Join(dir, "locks"), StopTimeout: 10 * time.Second, Password: "pw"}
}

// An install elevated through another administrator's UAC credentials
// would run the service as that administrator over the desktop user's
// home: refused, or with --run-as-installer noted with its consequence.
func TestInstallRefusesAHomeOfAnotherAccount(t *testing.T) {
	me, err := ctlsock.CurrentUserSID()
	if err != nil {
		t.Fatal(err)
	}
	const desktopUser = "S-1-5-21-1111111111-2222222222-3333333333-1001"
	for _, tt := range []struct {
		name    string
		owner   string
		allow   bool
		refused bool
		note    string
	}{
		{name: "the installer's own home", owner: me},
		{name: "the desktop user's home", owner: desktopUser, refused: true},
		{name: "the desktop user's home, allowed", owner: desktopUser, allow: true, note: "--run-as-installer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := ownerTestConfig(t)
			c.RunAsInstaller = tt.allow
			p, err := scmSeams{owner: func(string) (string, error) { return tt.owner, nil }}.install(c, false)
			switch {
			case tt.refused && !errors.Is(err, ErrHomeOwner):
				t.Fatalf("install over another account's home: %v, want %v", err, ErrHomeOwner)
			case tt.refused && !strings.Contains(err.Error(), "--run-as-installer"):
				t.Errorf("the refusal names no way on: %v", err)
			case !tt.refused && err != nil:
				t.Fatal(err)
			}
			notes := strings.Join(p.Notes, "\n")
			if tt.note != "" && !strings.Contains(notes, tt.note) {
				t.Errorf("notes %q lack %q", notes, tt.note)
			}
		})
	}
	// The real owner of a directory this account made is this account (or
	// the Administrators group, for an elevated one): accepted.
	c := ownerTestConfig(t)
	if _, err := (SCM{}).Install(c, false); errors.Is(err, ErrHomeOwner) {
		t.Errorf("a home this account made: %v", err)
	}
}

// The password is tried as the service manager will log on, before the
// service is created, and each refusal says what it means.
func TestInstallChecksThePasswordFirst(t *testing.T) {
	for _, tt := range []struct {
		name  string
		errs  map[uint32]error // by logon type
		types []uint32         // the logon types tried
		want  string           // in the error; "" for none
	}{
		{name: "right", types: []uint32{logon32LogonService}},
		{name: "a PIN, or no password", errs: map[uint32]error{logon32LogonService: windows.ERROR_LOGON_FAILURE}, types: []uint32{logon32LogonService}, want: "PIN"},
		{name: "blank", errs: map[uint32]error{logon32LogonService: windows.ERROR_ACCOUNT_RESTRICTION}, types: []uint32{logon32LogonService}, want: "blank password"},
		{name: "service right not yet effective", errs: map[uint32]error{logon32LogonService: windows.ERROR_LOGON_TYPE_NOT_GRANTED},
			types: []uint32{logon32LogonService, logon32LogonNetwork}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var tried []uint32
			logon := func(_, _ string, typ uint32) error { tried = append(tried, typ); return tt.errs[typ] }
			c := ownerTestConfig(t)
			p, err := scmSeams{logon: logon, owner: func(string) (string, error) { return "", nil }}.install(c, false)
			if err != nil {
				t.Fatal(err)
			}
			var create *Step
			for i := range p.Steps {
				if strings.Contains(p.Steps[i].What, "create or update") {
					create = &p.Steps[i]
				}
			}
			if create == nil {
				t.Fatal("no create step")
			}
			if tt.want == "" {
				err = checkLogon(logon, "HOST\\ann", c.Password) // the step itself would create the service
			} else {
				err = create.Do(context.Background())
			}
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want != "" && (!errors.Is(err, ErrLogon) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("create with a refused password: %v, want %v saying %q", err, ErrLogon, tt.want)
			}
			if !slices.Equal(tried, tt.types) {
				t.Errorf("logon types tried %v, want %v", tried, tt.types)
			}
		})
	}
}

package main

import (
	"testing"

	"github.com/hermes-agent/hermes-supervisor/platform/service"
)

// installedOnly is a service manager that only knows which definitions
// exist: pickDefinition asks nothing else.
type installedOnly struct {
	service.Manager
	defs []service.Definition
}

func (m installedOnly) Installed(service.Config) []service.Definition { return m.defs }

func TestPickDefinition(t *testing.T) {
	user := service.Definition{Path: "/u/hermes-supervisor.service", Home: "/h"}
	sys := service.Definition{System: true, Path: "/etc/hermes-supervisor.service", Home: "/h"}
	other := service.Definition{System: true, Path: "/etc/hermes-supervisor.service", Home: "/other"}
	tests := []struct {
		name         string
		defs         []service.Definition
		user, system bool
		home         string
		wantFound    bool
		wantSystem   bool
		wantErr      bool
	}{
		{name: "none", wantFound: false},
		{name: "only user", defs: []service.Definition{user}, wantFound: true},
		{name: "only system", defs: []service.Definition{sys}, wantFound: true, wantSystem: true},
		{name: "both asks", defs: []service.Definition{user, sys}, wantErr: true},
		{name: "both, --system", defs: []service.Definition{user, sys}, system: true, wantFound: true, wantSystem: true},
		{name: "both, --user", defs: []service.Definition{user, sys}, user: true, wantFound: true},
		{name: "--user, only system", defs: []service.Definition{sys}, user: true, wantFound: false},
		{name: "another home's is not this home's", defs: []service.Definition{user, other}, home: "/h", wantFound: true},
		{name: "only another home's", defs: []service.Definition{other}, home: "/h", wantFound: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c service.Config
			f := &serviceFlags{user: tt.user, system: tt.system}
			_, found, err := pickDefinition(installedOnly{defs: tt.defs}, &c, f, tt.home)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if found != tt.wantFound || (found && c.System != tt.wantSystem) {
				t.Errorf("found %v system %v, want found %v system %v", found, c.System, tt.wantFound, tt.wantSystem)
			}
		})
	}
}

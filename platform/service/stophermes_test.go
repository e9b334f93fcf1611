//go:build !windows

package service

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// install --migrate stops the gateway Hermes itself still runs (a detached
// `hermes gateway run` outlives its unit or agent): once Hermes' own
// definitions are disabled, before ours starts; without --migrate, never.
func TestMigrateStopsHermesGateway(t *testing.T) {
	hermesUnit := func(pattern string) ([]string, error) {
		return filepath.Glob(filepath.Join("testdata", "migrate", "systemd", filepath.Base(pattern)))
	}
	hermesAgent := func(pattern string) ([]string, error) {
		return filepath.Glob(filepath.Join("testdata", "migrate", "launchd", filepath.Base(pattern)))
	}
	gui := (&fakeLaunchctl{}).output
	for _, tt := range []struct {
		name    string
		install func(c Config, migrate bool) (Plan, error)
		before  []string // a command the stop comes after
		after   []string // a command it comes before; nil: the plan's last Do steps
	}{
		{"systemd", Systemd{Glob: hermesUnit}.Install,
			[]string{"systemctl", "--user", "disable", "--now", "hermes-gateway.service"},
			[]string{"systemctl", "--user", "restart", "--no-block", "hermes-supervisor.service"}},
		{"launchd", Launchd{Glob: hermesAgent, Output: gui}.Install,
			[]string{"launchctl", "disable", "user/501/ai.hermes.gateway"},
			[]string{"launchctl", "bootout", "gui/501/ai.hermes.supervisor"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, migrate := range []bool{true, false} {
				called := 0
				c := ann(false)
				c.StopHermes = func(context.Context) error { called++; return nil }
				p, err := tt.install(c, migrate)
				if err != nil {
					t.Fatal(err)
				}
				stop, before, after := -1, -1, -1
				for i, s := range p.Steps {
					switch {
					case s.Do != nil && strings.Contains(s.What, "Hermes itself"):
						called = 0
						if err := s.Do(context.Background()); err == nil && called == 1 {
							stop = i
						}
					case slices.Equal(s.Run, tt.before):
						before = i
					case slices.Equal(s.Run, tt.after):
						after = i
					}
				}
				switch {
				case !migrate && stop >= 0:
					t.Error("install without --migrate stops Hermes' gateway")
				case migrate && stop < 0:
					t.Error("install --migrate never stops the gateway Hermes itself runs")
				case migrate && (stop < before || after < stop):
					t.Errorf("the stop is step %d: want it after %q (%d) and before %q (%d)", stop, tt.before, before, tt.after, after)
				}
			}
		})
	}
}

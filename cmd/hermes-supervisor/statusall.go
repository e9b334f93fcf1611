package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"go.uber.org/zap"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/service"
	"github.com/hermes-agent/hermes-supervisor/platform/termtext"
	"github.com/hermes-agent/hermes-supervisor/procstate"
	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

// homeRow is one line of `status --all`: a home under the root, what its
// supervisor says, what Hermes would say, and its service definition.
type homeRow struct {
	Profile string `json:"profile"`
	Home    string `json:"home"`
	// Supervised is the supervisor's state (its control endpoint's
	// answer, else the state file it left), or "none".
	Supervised string `json:"supervised"`
	Source     string `json:"source,omitempty"`
	// Hermes is what Hermes' own readers would say of the home's gateway:
	// running, served, stopped, parked or deleted.
	Hermes    string             `json:"hermes"`
	HermesPID int                `json:"hermes_pid,omitempty"`
	Service   string             `json:"service"`
	LastExit  *supervisor.Exit   `json:"last_exit,omitempty"`
	Error     string             `json:"error,omitempty"`
	Status    *supervisor.Status `json:"status,omitempty"`
	code      int
}

// rootHomes lists the root and every named profile under it, as Hermes'
// profile list does (a directory of a valid name holding a profile's
// files); the tombstoned ones are marked: status --all shows them only
// while a supervisor of theirs still runs, which must then be stopped.
func rootHomes(root string) (homes []string, deleted map[string]bool) {
	homes = []string{root}
	deleted = map[string]bool{}
	entries, err := os.ReadDir(lockstore.ProfilesDir(root))
	if err != nil {
		return homes, deleted
	}
	for _, e := range entries {
		h := filepath.Join(lockstore.ProfilesDir(root), e.Name())
		// A link to a directory is a profile too, as Hermes' is_dir()
		// follows it: listing it only reads what lies behind it.
		if fi, err := os.Stat(h); !named(h) || err != nil || !fi.IsDir() {
			continue
		}
		if !slices.ContainsFunc(lockstore.ProfileIdentityFiles, func(f string) bool { return fileExists(filepath.Join(h, f)) }) {
			continue // a ghost Hermes does not list either
		}
		if _, err := os.Lstat(lockstore.ProfileTombstone(h)); err == nil {
			deleted[h] = true
		}
		homes = append(homes, h)
	}
	return homes, deleted
}

// statusAll builds the table of `status --all` for the root of layout's
// home, and the LSB exit code of the worst home.
func statusAll(ctx context.Context, layout lockstore.Layout, timeout time.Duration) ([]homeRow, int) {
	root := lockstore.ProfileRoot(layout.Home)
	homes, deleted := rootHomes(root)
	prober := procstate.NewProber(procstate.Options{StartTolerance: -1})
	rootStore := lockstore.New(lockstore.Layout{Home: root, LockDir: layout.LockDir}, prober, zap.NewNop(), time.Now)
	mux, muxOK := rootStore.Multiplexer(ctx)
	// Newer Hermes' one host gateway per user, believed only with its
	// lock held and its process proven (lockstore.HostGateway).
	host, hostOK := rootStore.HostGateway(ctx)
	userHome, _ := os.UserHomeDir()
	m := service.New()
	worst := statusRunning
	var rows []homeRow
	for _, h := range homes {
		l := lockstore.Layout{Home: h, LockDir: layout.LockDir}
		name, named := lockstore.NamedProfile(h)
		if !named {
			name = lockstore.DefaultProfile
		}
		r := homeRow{Profile: name, Home: h, Supervised: "none", code: statusNotRunning}
		qctx, cancel := context.WithTimeout(ctx, timeout)
		st, err := supervisor.QueryStatus(qctx, l)
		cancel()
		switch {
		case errors.Is(err, supervisor.ErrNoHome):
		case err != nil:
			r.Supervised, r.Error, r.code = "unknown", err.Error(), statusUnknown
		default:
			r.Status, r.Source, r.LastExit = st, st.Source, st.LastExit
			if st.Source != "none" {
				r.Supervised = string(st.State)
			}
			if st.Up() && st.Source != "none" {
				r.code = statusRunning
			}
		}
		if deleted[h] && r.code != statusRunning {
			continue // deleted, and nothing of ours runs for it
		}
		store := lockstore.New(l, prober, zap.NewNop(), time.Now)
		switch running, ok := store.Running(ctx); {
		case deleted[h]:
			r.Hermes = "deleted"
		case fileExists(filepath.Join(h, "gateway.parked")):
			r.Hermes = "parked"
		case ok && running.Record != nil:
			r.Hermes, r.HermesPID = "running", running.Record.PID
		case ok:
			// A held gateway.lock whose record does not read, or a state
			// file Hermes' own check raises on: running, by no pid.
			r.Hermes = "running"
		case named && muxOK && mux.Serves(name):
			r.Hermes, r.HermesPID = "served", mux.PID
		case hostOK && host.Serves(name):
			r.Hermes, r.HermesPID = "served", host.PID
		default:
			r.Hermes = "stopped"
		}
		if r.Hermes == "served" && r.code == statusNotRunning {
			// The profile's gateway runs, as single status says of
			// state served: the multiplexer's topology is not a failure.
			r.code = statusRunning
		}
		r.Service = "none"
		c := service.Config{Home: h, Suffix: lockstore.ServiceSuffix(h), UserHome: userHome}
		var defs []string
		for _, d := range m.Installed(c) {
			if d.Home == "" || filepath.Clean(d.Home) == filepath.Clean(h) {
				scope := "user"
				if d.System {
					scope = "system"
				}
				defs = append(defs, scope+" "+d.Path)
			}
		}
		if len(defs) > 0 {
			r.Service = strings.Join(defs, ", ")
		}
		worst = max(worst, r.code)
		rows = append(rows, r)
	}
	return rows, worst
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// writeStatusAll prints the table; every value may come from a file we
// do not trust (a directory's name, a state file), so each is escaped.
func writeStatusAll(w io.Writer, rows []homeRow) error {
	q := termtext.Quote
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROFILE\tHOME\tSUPERVISOR\tHERMES SAYS\tSERVICE\tLAST EXIT")
	for _, r := range rows {
		sup := r.Supervised
		if r.Source == "state-file" {
			sup += " (state file)"
		}
		hermes := r.Hermes
		switch r.Hermes {
		case "running":
			hermes = fmt.Sprintf("running, pid %d", r.HermesPID)
			if r.HermesPID == 0 {
				hermes = "running, pid unknown"
			}
		case "served":
			hermes = fmt.Sprintf("served by pid %d", r.HermesPID)
		}
		last := "-"
		if r.LastExit != nil {
			last = r.LastExit.String()
		}
		if r.Error != "" {
			last = r.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", q(r.Profile), q(r.Home), q(sup), hermes, q(r.Service), q(last))
	}
	return tw.Flush()
}

// sortRows keeps the root first and profiles by name.
func sortRows(rows []homeRow) {
	slices.SortStableFunc(rows[min(1, len(rows)):], func(a, b homeRow) int { return strings.Compare(a.Profile, b.Profile) })
}

func named(home string) bool {
	_, ok := lockstore.NamedProfile(home)
	return ok
}

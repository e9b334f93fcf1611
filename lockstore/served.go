package lockstore

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// Multiplexer is a root home's gateway serving other profiles (Hermes
// v0.21's gateway.multiplex_profiles): its pid and the profiles its
// gateway_state.json lists as served_profiles.
type Multiplexer struct {
	PID      int      `json:"pid"`
	Profiles []string `json:"served_profiles"`
}

// Serves reports whether m serves profile name.
func (m Multiplexer) Serves(name string) bool { return slices.Contains(m.Profiles, name) }

// Multiplexer reports the live gateway of this store's home (a root home)
// and the profiles it serves, as Hermes' multiplexer_liveness_for_profile
// finds them: gateway_state.json's served_profiles believed only when its
// pid is the gateway that runs here by Hermes' own rule (Running), so
// that a state file a dead multiplexer left behind, or one naming some
// other live process, serves nobody. Stricter than Hermes, whose
// get_running_pid falls back to gateway_state.json when gateway.lock is
// free: a multiplexer (v0.21) always holds gateway.lock, and files alone
// naming a live process whose command line reads as a gateway's must not
// keep a profile's gateway from starting. It reads and changes nothing
// else.
func (s *Store) Multiplexer(ctx context.Context) (Multiplexer, bool) {
	running, ok := s.Running(ctx)
	if !ok || running.Record == nil {
		return Multiplexer{}, false
	}
	if held, err := s.RuntimeLockHeld(); err != nil || !held {
		return Multiplexer{}, false
	}
	b, err := readBounded(s.layout.StateFile())
	if err != nil {
		return Multiplexer{}, false
	}
	fields, _, err := readJSONFile(b, false)
	if err != nil {
		return Multiplexer{}, false
	}
	pid, how := pidFromRecord(fields, "pid")
	if how != pidOK || pid != running.Record.PID {
		return Multiplexer{}, false
	}
	var raw []json.RawMessage
	if json.Unmarshal(fields.at("served_profiles"), &raw) != nil {
		return Multiplexer{}, false
	}
	m := Multiplexer{PID: pid}
	for _, r := range raw {
		var name string
		// A name that is no valid profile id names no home of ours.
		if json.Unmarshal(r, &name) == nil && ValidateProfileName(name) == nil && !slices.Contains(m.Profiles, name) {
			m.Profiles = append(m.Profiles, name)
		}
	}
	return m, len(m.Profiles) > 0
}

// HostGateway is the one host gateway of newer Hermes: its pid, the home
// it was launched from, and the profiles host-gateway.json lists.
type HostGateway struct {
	PID      int
	Home     string
	Profiles []string
	// Why says what proved it, or why nothing could be.
	Why string
}

// Serves reports whether h serves profile name.
func (h HostGateway) Serves(name string) bool { return slices.Contains(h.Profiles, name) }

// HostGateway reports the host gateway that host-gateway.json in this
// store's lock dir names, when judgeHost believes it: written by our own
// uid, host-gateway.lock held, its pid live and created when the record
// says. It reads, probes and changes nothing else; the Why of a false
// answer says what failed ("" when there is no record at all).
func (s *Store) HostGateway(ctx context.Context) (HostGateway, bool) {
	path := filepath.Join(s.layout.LockDir, HostGatewayRecord)
	b, stamp, err := safefs.ReadRegular(path, MaxRecordSize+1)
	if errors.Is(err, os.ErrNotExist) {
		return HostGateway{}, false
	}
	if err != nil {
		return HostGateway{Why: oneLine(err.Error())}, false
	}
	f := hostFacts{data: b, owner: stamp.Owner(), self: ownUID()}
	f.lockHeld, err = fileLocked(filepath.Join(s.layout.LockDir, HostGatewayLock))
	if err == nil && f.lockHeld {
		if r, perr := parseHostRecord(b); perr == nil {
			f.live, f.liveErr = s.prober.Look(ctx, r.PID)
			if f.liveErr == nil {
				if t, cerr := s.prober.CreateTime(ctx, r.PID); cerr == nil {
					f.created, f.createdKnown = t, true
				}
			}
		}
	}
	r, why, ok := judgeHost(f)
	return HostGateway{PID: r.PID, Home: r.Home, Profiles: r.Profiles, Why: why}, ok
}

// ownUID is the uid files we write get; nil where uids mean nothing.
func ownUID() *uint32 {
	uid := os.Getuid()
	if uid < 0 {
		return nil
	}
	u := uint32(uid)
	return &u
}

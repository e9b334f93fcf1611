package lockstore

import (
	"context"
	"encoding/json"
	"slices"
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
// pid is the gateway that runs here by Hermes' own rule (Running: the
// runtime lock decides), so that a state file a dead multiplexer left
// behind, or one naming some other live process, serves nobody. It reads
// and changes nothing else.
func (s *Store) Multiplexer(ctx context.Context) (Multiplexer, bool) {
	running, ok := s.Running(ctx)
	if !ok || running.Record == nil {
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
	if json.Unmarshal(fields["served_profiles"], &raw) != nil {
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

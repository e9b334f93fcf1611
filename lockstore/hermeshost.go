package lockstore

// Hermes' host gateway record (gateway/host_rendezvous.py of
// NousResearch/hermes-agent @ 1df43825, newer code): one host gateway per
// OS user serves every profile, and publishes host-gateway.json in the
// lock dir while it holds host-gateway.lock there. No I/O here: served.go
// reads the files and looks at the process.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// The host gateway's files in the lock dir. Neither is a token lock.
const (
	HostGatewayRecord = "host-gateway.json"
	HostGatewayLock   = "host-gateway.lock"
)

// hostProtocol is HOST_PROTOCOL_VERSION: a record of another version is
// stale to Hermes itself.
const hostProtocol = 1

// hostCreateSlack is _same_incarnation's tolerance between the recorded
// createTime and the live process's.
const hostCreateSlack = 2 * time.Second

// hostRecord is host-gateway.json as HostRecord.from_json reads it, with
// the fields the supervisor uses.
type hostRecord struct {
	PID      int
	Create   time.Time
	Home     string
	Profiles []string
}

// parseHostRecord reads host-gateway.json. Stricter than Hermes, which
// takes a record without createTime as a candidate to probe over TCP: a
// record is believed only with role "gateway", protocol version 1, a pid
// that is a JSON integer (not true), and a createTime; profiles that are
// no valid profile name are dropped.
func parseHostRecord(b []byte) (hostRecord, error) {
	var raw map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(b, []byte("\ufeff"))))
	d.UseNumber()
	if err := d.Decode(&raw); err != nil || raw == nil {
		return hostRecord{}, errors.New("not a JSON object")
	}
	var role string
	if json.Unmarshal(raw["role"], &role) != nil || role != "gateway" {
		return hostRecord{}, errors.New(`role is not "gateway"`)
	}
	var version, pid int
	if json.Unmarshal(raw["protocolVersion"], &version) != nil || version != hostProtocol {
		return hostRecord{}, fmt.Errorf("protocolVersion is not %d", hostProtocol)
	}
	if json.Unmarshal(raw["pid"], &pid) != nil || pid <= 0 || pid > math.MaxInt32 {
		return hostRecord{}, errors.New("no usable pid")
	}
	var create float64
	if json.Unmarshal(raw["createTime"], &create) != nil || create <= 0 || math.IsInf(create, 0) {
		return hostRecord{}, errors.New("no createTime: the process cannot be proven")
	}
	r := hostRecord{PID: pid, Create: time.UnixMilli(int64(create * 1000))}
	_ = json.Unmarshal(raw["home"], &r.Home)
	var names []json.RawMessage
	_ = json.Unmarshal(raw["profiles"], &names)
	for _, n := range names {
		var name string
		if json.Unmarshal(n, &name) == nil && ValidateProfileName(name) == nil && !slices.Contains(r.Profiles, name) {
			r.Profiles = append(r.Profiles, name)
		}
	}
	return r, nil
}

// hostFacts is what served.go found of the host gateway: the record's
// owner uid and our own (nil where uids mean nothing), whether
// host-gateway.lock is held, and one look at the recorded pid.
type hostFacts struct {
	data         []byte
	owner, self  *uint32
	lockHeld     bool
	live         procstate.Live
	liveErr      error
	created      time.Time
	createdKnown bool
}

// judgeHost decides whether host-gateway.json names a live host gateway
// (record_is_stale and liveness_is_proven): the record is ours (written
// by this OS user, as _record_is_own requires), its pid lives, is no
// zombie, and was created within 2 s of the recorded createTime. Stricter
// than Hermes: host-gateway.lock must be held, the createTime must be
// known on both sides, and a readable command line must be a gateway's.
func judgeHost(f hostFacts) (hostRecord, string, bool) {
	r, err := parseHostRecord(f.data)
	switch {
	case err != nil:
		return r, "host-gateway.json: " + err.Error(), false
	case f.owner != nil && f.self != nil && *f.owner != *f.self:
		return r, fmt.Sprintf("host-gateway.json is owned by uid %d, not by us (uid %d)", *f.owner, *f.self), false
	case !f.lockHeld:
		return r, "host-gateway.lock is not held: no host gateway runs", false
	case f.liveErr != nil:
		return r, fmt.Sprintf("host-gateway.json names pid %d: %s", r.PID, oneLine(f.liveErr.Error())), false
	case f.live.Zombie:
		return r, fmt.Sprintf("host-gateway.json names pid %d, a zombie", r.PID), false
	case !f.createdKnown:
		return r, fmt.Sprintf("the creation time of pid %d cannot be read", r.PID), false
	case f.created.Sub(r.Create).Abs() >= hostCreateSlack:
		return r, fmt.Sprintf("pid %d was created at %s, not at the recorded createTime: reused", r.PID, f.created.UTC().Format(time.RFC3339)), false
	case f.live.Argv != nil && !IsGatewayRuntime(f.live.Argv) && !isDemoGateway(f.live.Argv):
		return r, fmt.Sprintf("pid %d runs %s, not a gateway", r.PID, quoteArgv(f.live.Argv)), false
	}
	return r, fmt.Sprintf("host gateway pid %d (host-gateway.json, host-gateway.lock held)", r.PID), true
}

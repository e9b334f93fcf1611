package lockstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// TestJudgeHost: host-gateway.json serves nobody unless every proof
// holds; each row breaks one, as a stale or forged record would.
func TestJudgeHost(t *testing.T) {
	created := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	rec := func(pid, create string) []byte {
		return []byte(fmt.Sprintf(`{"role":"gateway","home":"/home/ann/.hermes","pid":%s,"createTime":%s,"protocolVersion":1,"profiles":["default","work","../x"]}`, pid, create))
	}
	good := rec("4242", fmt.Sprint(float64(created.UnixMilli())/1000+0.4))
	me, other := uint32(1000), uint32(0)
	base := func() hostFacts {
		return hostFacts{data: good, owner: &me, self: &me, lockHeld: true, created: created, createdKnown: true,
			live: procstate.Live{PID: 4242, Argv: []string{"/usr/bin/hermes", "gateway", "run"}}}
	}
	for _, tt := range []struct {
		name   string
		change func(*hostFacts)
		want   bool
	}{
		{"proven", func(*hostFacts) {}, true},
		{"command line unreadable", func(f *hostFacts) { f.live.Argv = nil }, true},
		{"written by another uid", func(f *hostFacts) { f.owner = &other }, false},
		{"host-gateway.lock not held", func(f *hostFacts) { f.lockHeld = false }, false},
		{"pid dead", func(f *hostFacts) { f.liveErr = fmt.Errorf("pid: %w", procstate.ErrNoProcess) }, false},
		{"zombie", func(f *hostFacts) { f.live.Zombie = true }, false},
		{"pid reused (created 3 s later)", func(f *hostFacts) { f.created = created.Add(3 * time.Second) }, false},
		{"creation time unreadable", func(f *hostFacts) { f.createdKnown = false }, false},
		{"pid now runs no gateway", func(f *hostFacts) { f.live.Argv = []string{"/usr/bin/sleep", "100"} }, false},
		{"no createTime", func(f *hostFacts) { f.data = rec("4242", "null") }, false},
		{"pid true", func(f *hostFacts) { f.data = rec("true", "1") }, false},
		{"pid a float", func(f *hostFacts) { f.data = rec("4242.5", "1") }, false},
		{"another protocol", func(f *hostFacts) {
			f.data = []byte(`{"role":"gateway","pid":4242,"createTime":1,"protocolVersion":2,"profiles":["work"]}`)
		}, false},
		{"role serve", func(f *hostFacts) {
			f.data = []byte(`{"role":"serve","pid":4242,"createTime":1,"protocolVersion":1,"profiles":["work"]}`)
		}, false},
		{"garbage", func(f *hostFacts) { f.data = []byte("\x00\xffgarbage") }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := base()
			tt.change(&f)
			r, why, ok := judgeHost(f)
			if ok != tt.want {
				t.Fatalf("judgeHost = %v (%s), want %v", ok, why, tt.want)
			}
			if ok && (r.PID != 4242 || len(r.Profiles) != 2 || r.Profiles[1] != "work") {
				t.Fatalf("record read as %+v: want pid 4242 serving default and work (not ../x)", r)
			}
		})
	}
	if _, err := parseHostRecord([]byte(`[]`)); err == nil {
		t.Fatal("a JSON list was read as a host record")
	}
}

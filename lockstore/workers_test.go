package lockstore

import (
	"bytes"
	"context"
	"reflect"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// TestParallelRunsEachOnceOnAtMostW: every index once, never more than w
// at a time, whatever the items per goroutine.
func TestParallelRunsEachOnceOnAtMostW(t *testing.T) {
	for _, per := range []int{fileItems, 4, 1} {
		for _, w := range []int{1, 2, 3, 8} {
			const n = 4096
			var seen [n]atomic.Int32
			var in, most atomic.Int32
			parallelOn(w, n, per, func(_, i int) {
				c := in.Add(1)
				for m := most.Load(); c > m && !most.CompareAndSwap(m, c); m = most.Load() {
				}
				seen[i].Add(1)
				runtime.Gosched()
				in.Add(-1)
			})
			if m := most.Load(); m > int32(w) {
				t.Errorf("per %d, w %d: %d at once", per, w, m)
			}
			for i := range seen {
				if c := seen[i].Load(); c != 1 {
					t.Fatalf("per %d, w %d: index %d ran %d times", per, w, i, c)
				}
			}
		}
	}
}

// TestParallelOnStartsGoroutinesOnlyForEnoughItems: fewer than two
// goroutines' worth of items run on the caller's goroutine, where a
// second would cost a thread's wake-up more than it saves; from 2*per
// items a second goroutine takes some.
func TestParallelOnStartsGoroutinesOnlyForEnoughItems(t *testing.T) {
	tests := []struct {
		per, n     int
		wantHelper bool
	}{
		{4, 7, false},
		{4, 8, true},
		{fileItems, 2*fileItems - 1, false},
		{fileItems, 2 * fileItems, true},
	}
	for _, tt := range tests {
		caller := goroutineID()
		var others atomic.Int32
		// The caller's goroutine waits in its first item until a helper
		// has taken one: with no helper, it gives up after a while.
		first := make(chan struct{})
		var once sync.Once
		waited := false
		parallelOn(2, tt.n, tt.per, func(_, i int) {
			if goroutineID() != caller {
				others.Add(1)
				once.Do(func() { close(first) })
				return
			}
			if tt.wantHelper && !waited {
				waited = true
				select {
				case <-first:
				case <-time.After(10 * time.Second):
				}
			}
		})
		if got := others.Load() > 0; got != tt.wantHelper {
			t.Errorf("per %d, %d items: another goroutine took items %v, want %v", tt.per, tt.n, got, tt.wantHelper)
		}
	}
}

// goroutineID is the running goroutine's id, from its stack's header.
func goroutineID() string {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b, _, _ = bytes.Cut(bytes.TrimPrefix(b, []byte("goroutine ")), []byte(" "))
	return string(b)
}

// TestBatchHandsOutZeroedEntries: a batch's slice comes back for the
// next batch with nothing of what the last one read or decided, beyond
// its length too, and a batch bigger than the slice gets a new one.
func TestBatchHandsOutZeroedEntries(t *testing.T) {
	var b batch
	js := b.get(4)
	if len(js) != 4 {
		t.Fatalf("get(4): %d entries", len(js))
	}
	for i := range js {
		js[i] = judged{Entry: Entry{Path: "p", Action: ActionKeep, Record: &Record{PID: 7}}, facts: fileFacts{data: []byte("{}")}, released: true, in: new(safefs.Dir)}
	}
	first := &js[0]
	b.done()
	again := b.get(3)
	if &again[0] != first {
		t.Fatal("the batch's slice was not reused")
	}
	for i, e := range again[:cap(again)] {
		if !reflect.ValueOf(e).IsZero() {
			t.Errorf("entry %d of a reused slice holds %+v", i, e)
		}
	}
	b.done()
	if big := b.get(5); len(big) != 5 || &big[0] == first {
		t.Fatalf("get(5) with a slice of 4: %d entries, reused %v", len(big), &big[0] == first)
	}
}

// TestFanOutIsAskedOncePerBigSweep: a sweep (dry or not)
// asks WithFanOut's function once, before its first goroutine beyond the
// caller's starts, though it fans out more than once (to read, then to
// judge and act); it gives it back before it returns; and a sweep with
// too few files for a second goroutine never asks, where one with enough
// asks even when it may use only one.
func TestFanOutIsAskedOncePerBigSweep(t *testing.T) {
	tests := []struct {
		name           string
		files, workers int
		wantAsks       int
	}{
		{"a few files", 3, 2, 0},
		{"one short of enough for two goroutines", 2*fileItems - 1, 2, 0},
		{"enough for two goroutines", 2 * fileItems, 2, 1},
		// One goroutine keeps the one P busy: the spare is needed too.
		{"enough, on one goroutine", 2 * fileItems, 1, 1},
	}
	for _, tt := range tests {
		for _, dry := range []bool{true, false} {
			s, l := newStore(t)
			s.WithWorkers(tt.workers)
			dead := deadIdentity(t)
			for i := range tt.files {
				writeRecord(t, l.ScopedLock("telegram-bot-token", strconv.Itoa(i)), dead, l.Home)
			}
			var mu sync.Mutex
			asks, lent, judgedUnlent := 0, 0, 0
			s.WithFanOut(func() func() {
				mu.Lock()
				defer mu.Unlock()
				asks++
				lent++
				return func() {
					mu.Lock()
					defer mu.Unlock()
					lent--
				}
			})
			s.beforeJudge = func(string) {
				mu.Lock()
				defer mu.Unlock()
				if lent == 0 {
					judgedUnlent++
				}
			}
			es, err := s.Sweep(context.Background(), dry)
			if err != nil {
				t.Fatalf("%s, dry %v: %v", tt.name, dry, err)
			}
			if len(es) < tt.files {
				t.Fatalf("%s, dry %v: %d entries for %d files", tt.name, dry, len(es), tt.files)
			}
			mu.Lock()
			if asks != tt.wantAsks {
				t.Errorf("%s, dry %v: asked %d times, want %d", tt.name, dry, asks, tt.wantAsks)
			}
			if lent != 0 {
				t.Errorf("%s, dry %v: %d not given back when the sweep returned", tt.name, dry, lent)
			}
			if tt.wantAsks > 0 && judgedUnlent > 0 {
				t.Errorf("%s, dry %v: %d files judged before the fan-out was asked for", tt.name, dry, judgedUnlent)
			}
			mu.Unlock()
		}
	}
}

package lockstore

import (
	"bytes"
	"reflect"
	"runtime"
	"slices"
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
	for _, per := range []int{fileItems, lookItems, 1} {
		for _, w := range []int{1, 2, 3, 8} {
			const n = 4096
			var seen [n]atomic.Int32
			var in, most atomic.Int32
			parallelBy(w, n, per, func(i int) {
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

// TestParallelByStartsGoroutinesOnlyForEnoughItems: fewer than two
// goroutines' worth of items run on the caller's goroutine, where a
// second would cost a thread's wake-up more than it saves; from 2*per
// items a second goroutine takes some.
func TestParallelByStartsGoroutinesOnlyForEnoughItems(t *testing.T) {
	tests := []struct {
		per, n     int
		wantHelper bool
	}{
		{lookItems, 2*lookItems - 1, false},
		{lookItems, 2 * lookItems, true},
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
		parallelBy(2, tt.n, tt.per, func(i int) {
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

// TestAheadOfActsOnEveryBatchOnce: each batch is acted on once, in order,
// and all before end returns; a single batch is acted on by end itself,
// on the caller's goroutine, so a restart's sweep starts no goroutine.
// Judging and acting have all the workers when they take turns, and
// share them once they run at once.
func TestAheadOfActsOnEveryBatchOnce(t *testing.T) {
	const w, judgeW, actW = 3, 2, 1
	for _, batches := range []int{0, 1, 2, 5} {
		var acted []string
		var inEnd atomic.Bool
		var actedOutsideEnd, mostGoroutines atomic.Int32
		base := int32(runtime.NumGoroutine())
		var judgedWith []int
		var actedWith []int
		judge := func(names []string, w int) []judged {
			judgedWith = append(judgedWith, w)
			return []judged{{Entry: Entry{Path: names[0]}}}
		}
		act := func(js []judged, w int) {
			if !inEnd.Load() {
				actedOutsideEnd.Add(1)
			}
			mostGoroutines.Store(max(mostGoroutines.Load(), int32(runtime.NumGoroutine())))
			acted = append(acted, js[0].Path)
			actedWith = append(actedWith, w)
		}
		each, end := aheadOf(w, judgeW, actW, nil, nil, judge, act)
		var want []string
		for i := range batches {
			name := strconv.Itoa(i)
			want = append(want, name)
			each([]string{name})
		}
		inEnd.Store(true)
		end()
		if !slices.Equal(acted, want) {
			t.Errorf("%d batches: acted on %v, want %v", batches, acted, want)
		}
		wantJudged, wantActed := []int{}, []int{}
		for i := range batches {
			switch {
			case batches == 1:
				wantJudged, wantActed = append(wantJudged, w), append(wantActed, w)
			case i == 0:
				wantJudged, wantActed = append(wantJudged, w), append(wantActed, actW)
			default:
				wantJudged, wantActed = append(wantJudged, judgeW), append(wantActed, actW)
			}
		}
		if !slices.Equal(judgedWith, wantJudged) || !slices.Equal(actedWith, wantActed) {
			t.Errorf("%d batches: judged with %v workers, acted with %v; want %v and %v", batches, judgedWith, actedWith, wantJudged, wantActed)
		}
		if batches == 1 && (actedOutsideEnd.Load() != 0 || mostGoroutines.Load() > base) {
			t.Errorf("one batch went ahead: acted on before end %d times, %d goroutines while acting, %d before",
				actedOutsideEnd.Load(), mostGoroutines.Load(), base)
		}
	}
}

// waitFor waits for cond, a state another goroutine reaches, failing t
// after a time no healthy run comes near.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		runtime.Gosched()
	}
}

// TestLobbyHelpTakesItemsAndParallelWaitsForThem: a goroutine that helps
// in a lobby takes items of the run in progress there, the run returns
// only once every item is done, whoever took it, and each runs once. The
// run has one worker and its first item waits for the last: only the
// helper can get it done.
func TestLobbyHelpTakesItemsAndParallelWaitsForThem(t *testing.T) {
	const n = 64
	var l lobby
	var ran [n]atomic.Int32
	last := make(chan struct{})
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		l.parallel(1, n, func(i int) {
			ran[i].Add(1)
			switch i {
			case 0:
				select {
				case <-last:
				case <-time.After(10 * time.Second):
					t.Error("the helper did not take the run's items")
				}
			case n - 1:
				close(last)
			}
		})
	}()
	waitFor(t, "the run offered in the lobby", func() bool { return l.cur.Load() != nil })
	l.help()
	<-returned
	for i := range ran {
		if c := ran[i].Load(); c != 1 {
			t.Errorf("item %d ran %d times", i, c)
		}
	}
	if l.cur.Load() != nil {
		t.Error("the lobby still offers a finished run")
	}
	l.help() // nothing runs: returns at once
	(*lobby)(nil).help()
}

// TestAheadOfHelpsTheSlowerSide: with one worker each, a judge that is
// ahead acts on the batch being acted on before it queues another, and
// the acting goroutine, idle, judges the batch being judged. Each side's
// first item waits for its second, which only the other side can take,
// so the sweep ends only if each helps.
func TestAheadOfHelpsTheSlowerSide(t *testing.T) {
	const n = 64
	var judging, acting lobby
	// stuck runs n items in l with one worker; its first waits for its
	// second, which another goroutine must take.
	stuck := func(l *lobby) {
		second := make(chan struct{})
		l.parallel(1, n, func(i int) {
			switch i {
			case 0:
				select {
				case <-second:
				case <-time.After(10 * time.Second):
					t.Error("no other goroutine took an item of a run in a lobby")
				}
			case 1:
				close(second)
			}
		})
	}
	// Whether each side's stuck run is offered in its lobby or already
	// over: a state that, once reached, stays.
	var judged1, acted1 atomic.Bool
	offered := func(l *lobby, over *atomic.Bool) func() bool {
		return func() bool { return l.cur.Load() != nil || over.Load() }
	}
	judge := func(names []string, w int) []judged {
		switch names[0] {
		case "1":
			// Batch 0 was handed to the acting goroutine: once it is
			// acted on, that goroutine is idle and must help here.
			stuck(&judging)
			judged1.Store(true)
		case "3":
			// Batch 1 is being acted on, so batch 2 waits queued:
			// this judge helps with batch 1's run before it queues 3.
			waitFor(t, "batch 1 acted on", offered(&acting, &acted1))
		}
		return []judged{{Entry: Entry{Path: names[0]}}}
	}
	var acted []string
	act := func(js []judged, w int) {
		if js[0].Path == "0" {
			// Idle only once batch 1's judging is offered.
			waitFor(t, "batch 1 judged", offered(&judging, &judged1))
		}
		if js[0].Path == "1" {
			stuck(&acting)
			acted1.Store(true)
		}
		acted = append(acted, js[0].Path)
	}
	each, end := aheadOf(2, 1, 1, &judging, &acting, judge, act)
	for i := range 5 {
		each([]string{strconv.Itoa(i)})
	}
	end()
	if want := []string{"0", "1", "2", "3", "4"}; !slices.Equal(acted, want) {
		t.Errorf("acted on %v, want %v", acted, want)
	}
}

// TestBatchesHandOutZeroedEntries: a batch's slice comes back for the
// next batch with nothing of what the last one read or decided, beyond
// its length too; a batch bigger than any slice given back gets a new
// one; and no slice is handed out twice.
func TestBatchesHandOutZeroedEntries(t *testing.T) {
	var b batches
	js := b.get(4)
	if len(js) != 4 {
		t.Fatalf("get(4): %d entries", len(js))
	}
	for i := range js {
		js[i] = judged{Entry: Entry{Path: "p", Action: ActionKeep, Record: &Record{PID: 7}}, facts: fileFacts{data: []byte("{}")}, released: true, in: new(safefs.Dir)}
	}
	first := &js[0]
	b.put(js[:2]) // compacted, as judgeLockFiles returns it
	again := b.get(3)
	if &again[0] != first {
		t.Fatal("a slice given back was not reused")
	}
	for i, e := range again[:cap(again)] {
		if !reflect.ValueOf(e).IsZero() {
			t.Errorf("entry %d of a reused slice holds %+v", i, e)
		}
	}
	b.put(again)
	big := b.get(5)
	if len(big) != 5 || &big[0] == first {
		t.Fatalf("get(5) with only a slice of 4 given back: %d entries, reused %v", len(big), &big[0] == first)
	}
	// Two batches in flight at once (one judged while the one before is
	// acted on) never share a slice.
	b.put(big)
	if x, y := b.get(5), b.get(5); &x[0] == &y[0] {
		t.Fatal("one slice handed to two batches at once")
	}
}

package logqueue

import (
	"sync"
	"testing"
	"time"
)

// A held queue does not wake its writer: what is put waits, in order,
// until Release, and Sync still writes it (a program that exits while
// held loses nothing).
func TestHoldKeepsItemsUntilRelease(t *testing.T) {
	var mu sync.Mutex
	var got []string
	delivered := make(chan struct{}, 16)
	q := NewQueue(func(batch []string) (int, int) {
		mu.Lock()
		got = append(got, batch...)
		mu.Unlock()
		delivered <- struct{}{}
		return 0, 0
	}, func(int, int) bool { return true }, func(s string) int { return len(s) }, 1<<10, time.Minute)

	q.Hold()
	q.Put("a")
	q.Put("b")
	// Held, Put owes the writer a wake instead of giving it one.
	q.mu.Lock()
	owed, woken := q.pending, len(q.wake)
	q.mu.Unlock()
	if !owed || woken != 0 {
		t.Fatalf("a held queue woke its writer (wake owed %v, given %d)", owed, woken)
	}
	q.Release()
	<-delivered
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}

	q.Hold()
	q.Put("c")
	if err := q.Sync(); err != nil {
		t.Fatalf("Sync while held: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"a", "b", "c"}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("delivered %q, want %q", got, want)
	}
}

package lockstore

import (
	"sync"
	"sync/atomic"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// A lock-dir file an acting sweep judges stays open until it is acted on
// (judged.open), so that its removal locks the descriptor judging read
// (safefs.HoldOpened) instead of opening and stamping the name again: two
// of a stale file's eleven system calls, about 8% of a sweep here.

// maxKeptOpen bounds the files a store's sweeps keep open at once. A
// sweep keeps one per goroutine it keeps busy, from a file's read to its
// removal; the bound holds however many sweeps run at once. Beyond it,
// or beyond safefs.SpareDescriptors, a file is read and closed, and its
// removal opens it again.
const maxKeptOpen = 3 * judgeBatch

// keptOpen counts the files a store's sweeps keep open.
type keptOpen struct {
	once sync.Once
	max  int64
	n    atomic.Int64
}

// take reserves room for one more file kept open, if there is room. It
// never counts past the bound, not even for a moment: an add taken back
// once over it refused, meanwhile, a take beside it that had room, and
// showed the store over its bound to whoever looked.
func (k *keptOpen) take() bool {
	k.once.Do(func() { k.max = int64(min(maxKeptOpen, safefs.SpareDescriptors())) })
	for {
		n := k.n.Load()
		if n >= k.max {
			return false
		}
		if k.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (k *keptOpen) put() { k.n.Add(-1) }

// takeOpen hands e's file kept open, if any, to the caller, who closes it.
func (s *Store) takeOpen(e *judged) *safefs.Opened {
	o := e.open
	if o != nil {
		e.open = nil
		s.open.put()
	}
	return o
}

// closeOpen closes e's file kept open, if any.
func (s *Store) closeOpen(e *judged) { _ = s.takeOpen(e).Close() }

//go:build unix

package safefs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestHoldOpenedAsHold: whatever becomes of a name between ReadOpen and
// HoldOpened, HoldOpened's outcome is the one Hold, opening the name
// afresh at that moment, gives: the same error, held or not, and a stamp
// of the same file; where another file took the name, that file's stamp,
// unheld. It never holds a file other than the one judged.
// Each swap is made twice, once before each call, from the same start.
func TestHoldOpenedAsHold(t *testing.T) {
	other := func(top string) string {
		p := filepath.Join(top, "other")
		if err := os.WriteFile(p, []byte("another file"), 0o600); err != nil {
			panic(err)
		}
		return p
	}
	swaps := []struct {
		name string
		swap func(t *testing.T, top, a string)
	}{
		{"truncated in place", func(t *testing.T, _, a string) { must(t, os.Truncate(a, 0)) }},
		{"replaced by a hard link of another file", func(t *testing.T, top, a string) {
			o := other(top)
			must(t, os.Remove(a))
			must(t, os.Link(o, a))
		}},
		{"renamed away and linked back", func(t *testing.T, top, a string) {
			must(t, os.Rename(a, filepath.Join(top, "moved")))
			must(t, os.Link(filepath.Join(top, "moved"), a))
		}},
		{"replaced by another file another holder locks", func(t *testing.T, top, a string) {
			o := other(top)
			must(t, os.Rename(o, a))
			f, err := os.Open(a)
			must(t, err)
			t.Cleanup(func() { f.Close() })
			must(t, LockFile(f))
		}},
		{"replaced by a FIFO", func(t *testing.T, _, a string) {
			must(t, os.Remove(a))
			must(t, unix.Mkfifo(a, 0o600))
		}},
		{"replaced by a directory", func(t *testing.T, _, a string) {
			must(t, os.Remove(a))
			must(t, os.Mkdir(a, 0o700))
		}},
		{"replaced by a link to another file", func(t *testing.T, top, a string) {
			o := other(top)
			must(t, os.Remove(a))
			must(t, os.Symlink(o, a))
		}},
		{"replaced by a dangling link", func(t *testing.T, top, a string) {
			must(t, os.Remove(a))
			must(t, os.Symlink(filepath.Join(top, "nowhere"), a))
		}},
	}
	type outcome struct {
		held     bool
		err      string // ErrNotRegular, ErrLocked, ErrNotExist or ""
		sameFile bool   // the stamp is of the file judged
		other    bool   // the stamp is of another file
	}
	classify := func(h *Held, st FileStamp, judged FileStamp, err error) outcome {
		o := outcome{held: h != nil, sameFile: st.SameFile(judged), other: st.SameFile(st) && !st.SameFile(judged)}
		for _, e := range []error{ErrNotRegular, ErrLocked, os.ErrNotExist} {
			if errors.Is(err, e) {
				o.err = e.Error()
			}
		}
		if err != nil && o.err == "" {
			o.err = err.Error()
		}
		if h != nil {
			must(t, h.Release())
		}
		return o
	}
	for _, sw := range swaps {
		t.Run(sw.name, func(t *testing.T) {
			var got [2]outcome
			for i, opened := range []bool{false, true} {
				top := t.TempDir()
				d := openDirIn(t, top)
				a := filepath.Join(top, "a")
				must(t, os.WriteFile(a, []byte("judged"), 0o600))
				_, judged, o, err := d.ReadOpen("a", 100)
				if err != nil {
					t.Fatal(err)
				}
				sw.swap(t, top, a)
				var h *Held
				var st FileStamp
				if opened {
					h, st, err = d.HoldOpened("a", o)
				} else {
					must(t, o.Close())
					h, st, err = d.Hold("a")
				}
				got[i] = classify(h, st, judged, err)
				if opened && h != nil && !got[i].sameFile {
					t.Error("HoldOpened held a file other than the one judged")
				}
			}
			if got[0].other {
				// Another file under the name: Hold locked it, or found
				// it locked; HoldOpened leaves it unheld and says nothing
				// but its stamp, which is all a caller acts on.
				got[0].held, got[0].err = false, ""
			}
			if got[0] != got[1] {
				t.Errorf("Hold: %+v; HoldOpened: %+v", got[0], got[1])
			}
		})
	}
}

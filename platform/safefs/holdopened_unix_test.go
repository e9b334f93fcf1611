//go:build unix

package safefs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestHoldOpened: a file ReadOpen kept open is locked only while its name
// still names it, and whatever happened to the name in between is
// reported as Hold, opening the name afresh, would report it. Every
// outcome but a hold closes the descriptor kept.
func TestHoldOpened(t *testing.T) {
	tests := []struct {
		name string
		// then changes the directory top between the read and the hold.
		then     func(t *testing.T, top string) *os.File
		wantHeld bool
		wantErr  error
		// wantOther: the stamp returned is of the file that took the name.
		wantOther bool
	}{
		{name: "unchanged", wantHeld: true},
		{name: "rewritten in place", wantHeld: true, then: func(t *testing.T, top string) *os.File {
			must(t, os.WriteFile(filepath.Join(top, "a"), []byte("rewritten"), 0o600))
			return nil
		}},
		{name: "replaced by a rename", wantOther: true, then: func(t *testing.T, top string) *os.File {
			must(t, os.WriteFile(filepath.Join(top, "new"), []byte("another"), 0o600))
			must(t, os.Rename(filepath.Join(top, "new"), filepath.Join(top, "a")))
			return nil
		}},
		{name: "removed", wantErr: os.ErrNotExist, then: func(t *testing.T, top string) *os.File {
			must(t, os.Remove(filepath.Join(top, "a")))
			return nil
		}},
		{name: "replaced by a link to itself", wantErr: ErrNotRegular, then: func(t *testing.T, top string) *os.File {
			must(t, os.Rename(filepath.Join(top, "a"), filepath.Join(top, "b")))
			must(t, os.Symlink("b", filepath.Join(top, "a")))
			return nil
		}},
		{name: "locked by another holder", wantErr: ErrLocked, then: func(t *testing.T, top string) *os.File {
			// flock locks belong to an open file description: one of
			// our own conflicts as another process's would.
			f, err := os.Open(filepath.Join(top, "a"))
			if err != nil {
				t.Fatal(err)
			}
			if err := LockFile(f); err != nil {
				t.Fatal(err)
			}
			return f
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			top := t.TempDir()
			d := openDirIn(t, top)
			must(t, os.WriteFile(filepath.Join(top, "a"), []byte("judged"), 0o600))
			b, judged, o, err := d.ReadOpen("a", 100)
			if err != nil || string(b) != "judged" || o == nil {
				t.Fatalf("ReadOpen: %q %v %v", b, o, err)
			}
			fd := o.sys.fd
			if tt.then != nil {
				if holder := tt.then(t, top); holder != nil {
					defer holder.Close()
				}
			}
			h, st, err := d.HoldOpened("a", o)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("HoldOpened: %v, want %v", err, tt.wantErr)
			}
			if (h != nil) != tt.wantHeld {
				t.Fatalf("held %v, want %v", h != nil, tt.wantHeld)
			}
			if tt.wantErr == nil && st.SameFile(judged) == tt.wantOther {
				t.Fatalf("the stamp is of the file judged: %v, want %v", st.SameFile(judged), !tt.wantOther)
			}
			if h == nil {
				if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); !errors.Is(err, unix.EBADF) {
					t.Fatalf("the descriptor kept is still open (%v)", err)
				}
				return
			}
			// Held: no one else can take the lock until it is let go.
			f, err := os.Open(filepath.Join(top, "a"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := LockFile(f); !errors.Is(err, ErrLocked) {
				t.Fatalf("a second lock while held: %v, want ErrLocked", err)
			}
			if err := h.Release(); err != nil {
				t.Fatal(err)
			}
			if err := LockFile(f); err != nil {
				t.Fatalf("a second lock once let go: %v", err)
			}
		})
	}
}

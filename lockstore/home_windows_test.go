package lockstore

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// TestSameHomeDecidesNothingWhereHermesCannot: on Windows, two homes are
// compared as Hermes compares them where it can. A rooted home without a
// drive beside one with a drive is on the current drive of whichever
// Hermes process reads it, not known here: homeMatches says so, and the
// record is kept.
func TestSameHomeDecidesNothingWhereHermesCannot(t *testing.T) {
	dir := testdir.New(t)
	home := filepath.Join(dir, "hermes")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	noDrive := strings.TrimPrefix(home, filepath.VolumeName(home))
	for _, tt := range []struct {
		name, recorded, home string
		same                 bool
		unknown              bool
	}{
		{"the same home", home, home, true, false},
		{"the same home in other case", strings.ToUpper(home), home, true, false},
		{"another home", filepath.Join(dir, "other"), home, false, false},
		{"without a drive", noDrive, home, false, true},
		{"this home without a drive", home, noDrive, false, true},
		{"both without a drive", noDrive, noDrive, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &rules{home: tt.home}
			same, unknown := r.homeMatches(hermesRecord{Record: Record{HermesHome: tt.recorded}})
			if same != tt.same || (unknown != "") != tt.unknown || tt.unknown && !strings.Contains(unknown, "drive") {
				t.Errorf("homeMatches(%q) in %q = %v, %q; want %v, unknown %v", tt.recorded, tt.home, same, unknown, tt.same, tt.unknown)
			}
		})
	}
}

// TestLinkLoopAsPythonSeesIt: the error Windows gives for a loop of links
// (ERROR_CANT_RESOLVE_FILENAME, 1921), on which 3.11's resolve() raises,
// is taken for a loop, and a missing path is not. Wine shows a loop as a
// missing file, so the error itself is made here.
func TestLinkLoopAsPythonSeesIt(t *testing.T) {
	for _, tt := range []struct {
		errno syscall.Errno
		loop  bool
	}{{1921, true}, {2, false}, {3, false}} {
		err := &fs.PathError{Op: "GetFileAttributesEx", Path: `C:\a\hermes`, Err: tt.errno}
		if got := isLinkLoop(err); got != tt.loop {
			t.Errorf("isLinkLoop(%v) = %v, want %v", err, got, tt.loop)
		}
	}
}

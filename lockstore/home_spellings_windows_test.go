package lockstore

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// TestSameHomeSpellings: the spellings of a Windows home Python's
// ntpath reads alike are one home here too, and those it reads on
// different drives (a share is a drive to ntpath) are another home's,
// never this one's; a rooted spelling without a drive beside one with a
// drive decides nothing, whichever separator it is written with.
func TestSameHomeSpellings(t *testing.T) {
	dir := testdir.New(t)
	home := filepath.Join(dir, "hermes")
	noDrive := strings.TrimPrefix(home, filepath.VolumeName(home))
	slashed := strings.ReplaceAll(noDrive, `\`, "/")
	const share = `\\nohost.invalid\share\hermes`
	for _, tt := range []struct {
		name, recorded, home string
		same, unknown        bool
	}{
		{"forward slashes, no drive, beside one without", slashed, noDrive, true, false},
		{"forward slashes, no drive, beside one with", slashed, home, false, true},
		{"forward slashes with the drive", filepath.VolumeName(home) + slashed, home, true, false},
		{"a share beside a drive", share, `C:\share\hermes`, false, false},
		{"a share in forward slashes", strings.ReplaceAll(share, `\`, "/"), share, true, false},
		{"a share in other case", strings.ToUpper(share), share, true, false},
		{"a share beside no drive", share, `\share\hermes`, false, true},
		{"a share's other folder", `\\nohost.invalid\share\other`, share, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &rules{home: tt.home}
			same, unknown := r.homeMatches(hermesRecord{Record: Record{HermesHome: tt.recorded}})
			if same != tt.same || (unknown != "") != tt.unknown {
				t.Errorf("homeMatches(%q) in %q = %v, %q; want %v, unknown %v", tt.recorded, tt.home, same, unknown, tt.same, tt.unknown)
			}
		})
	}
}
